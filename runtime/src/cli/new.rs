//! `airlock new`: creates a ready tool project (Rust, Python or JavaScript)
//! in a new folder, from the templates in `runtime/templates/`.
//!
//! Every project has one example tool with a description and one parameter
//! of each common kind, and a README that says how to build it, test it with
//! `airlock call` and serve it. Python and JavaScript projects get copies of
//! the contract (`wit/tool.wit`) and of their helper modules, so they build on
//! their own; a Rust project depends on this checkout's `sdk/rust` by
//! absolute path (the SDK is not published on crates.io).

use std::path::{Path, PathBuf};

use super::Exit;

/// The contract, copied into Python and JavaScript projects.
const WIT: &str = include_str!("../../../wit/tool.wit");

/// The skill a Rust or Python project ships (a JavaScript project has it
/// in `app.js`).
const SKILL: &str = include_str!("../../templates/skill/SKILL.md");

/// Where the Rust SDK was when this binary was built.
const SDK_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../sdk/rust");

/// One template file: its path in the project and its text (with
/// `{{name}}`, `{{snake}}` and `{{sdk_path}}` placeholders).
type File = (&'static str, &'static str);

const RUST: &[File] = &[
    (
        "Cargo.toml",
        include_str!("../../templates/rust/Cargo.toml"),
    ),
    (
        "src/lib.rs",
        include_str!("../../templates/rust/src/lib.rs"),
    ),
    ("README.md", include_str!("../../templates/rust/README.md")),
    (".gitignore", include_str!("../../templates/rust/gitignore")),
    ("skills/order-total/SKILL.md", SKILL),
];

const PYTHON: &[File] = &[
    ("app.py", include_str!("../../templates/python/app.py")),
    (
        "airlock_tool.py",
        include_str!("../../../sdk/python/airlock_tool.py"),
    ),
    (
        "airlock_schema.py",
        include_str!("../../../sdk/python/airlock_schema.py"),
    ),
    (
        "airlock_bundle.py",
        include_str!("../../../sdk/python/airlock_bundle.py"),
    ),
    (
        "airlock_offers.py",
        include_str!("../../../sdk/python/airlock_offers.py"),
    ),
    (
        "airlock_ask.py",
        include_str!("../../../sdk/python/airlock_ask.py"),
    ),
    (
        "airlock_skills.py",
        include_str!("../../../sdk/python/airlock_skills.py"),
    ),
    (
        "airlock_types.py",
        include_str!("../../../sdk/python/airlock_types.py"),
    ),
    ("build.py", include_str!("../../templates/python/build.py")),
    (
        "requirements.txt",
        include_str!("../../templates/python/requirements.txt"),
    ),
    (
        "README.md",
        include_str!("../../templates/python/README.md"),
    ),
    (
        ".gitignore",
        include_str!("../../templates/python/gitignore"),
    ),
    ("wit/tool.wit", WIT),
    ("skills/order-total/SKILL.md", SKILL),
    // For a tool that makes HTTP requests (`airlock_http`, the world
    // `server-http`).
    (
        "airlock_http.py",
        include_str!("../../../sdk/python/airlock_http.py"),
    ),
    (
        "wit/toolbox-http.wit",
        include_str!("../../../wit/toolbox-http.wit"),
    ),
    ("wit/deps/io.wit", include_str!("../../../wit/deps/io.wit")),
    (
        "wit/deps/clocks.wit",
        include_str!("../../../wit/deps/clocks.wit"),
    ),
    (
        "wit/deps/http.wit",
        include_str!("../../../wit/deps/http.wit"),
    ),
];

const JS: &[File] = &[
    ("app.js", include_str!("../../templates/js/app.js")),
    (
        "airlock-tool.js",
        include_str!("../../../sdk/js/airlock-tool.js"),
    ),
    (
        "airlock-server.js",
        include_str!("../../../sdk/js/airlock-server.js"),
    ),
    (
        "airlock-types.js",
        include_str!("../../../sdk/js/airlock-types.js"),
    ),
    (
        "package.json",
        include_str!("../../templates/js/package.json"),
    ),
    ("README.md", include_str!("../../templates/js/README.md")),
    (".gitignore", include_str!("../../templates/js/gitignore")),
    ("wit/tool.wit", WIT),
];

/// The language of a new project.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    Rust,
    Python,
    Js,
}

/// Create a new tool project in a new folder (never overwrites).
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  airlock new weather\n  \
                        airlock new weather --lang python\n  \
                        airlock new tools/weather --lang js\n\n\
                        The folder must not exist. Its README says how to build, test and serve the tool.")]
pub struct Args {
    /// The new folder; its last part is the project's name (lowercase
    /// letters, digits, `-` and `_`, starting with a letter).
    #[arg(value_name = "NAME")]
    path: PathBuf,
    /// The language of the example tool.
    #[arg(long, value_enum, default_value = "rust")]
    lang: Lang,
    /// Rust only: the airlock SDK (`sdk/rust` of an airlock checkout)
    /// to depend on by path [default: the checkout this binary was built from].
    #[arg(long, value_name = "DIR")]
    sdk: Option<PathBuf>,
}

pub fn run(args: Args) -> Exit {
    match create(&args.path, args.lang, args.sdk.as_deref()) {
        Ok(files) => {
            println!(
                "created {} ({} project, {} files); see {}",
                args.path.display(),
                match args.lang {
                    Lang::Rust => "Rust",
                    Lang::Python => "Python",
                    Lang::Js => "JavaScript",
                },
                files,
                args.path.join("README.md").display()
            );
            Exit::Ok
        }
        Err((exit, message)) => {
            eprintln!("error: {message}");
            exit
        }
    }
}

/// Checks a project name: 1 to 64 of `a-z 0-9 - _`, starting with a letter
/// (a valid crate, npm package and file name).
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a project name: use 1 to 64 lowercase letters, digits, - and _, starting with a letter"
        ))
    }
}

/// Creates the project; returns the number of files written.
pub fn create(path: &Path, lang: Lang, sdk: Option<&Path>) -> Result<usize, (Exit, String)> {
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        (
            Exit::Usage,
            format!("{} has no folder name", path.display()),
        )
    })?;
    check_name(name).map_err(|e| (Exit::Usage, e))?;
    let sdk_path = if lang == Lang::Rust {
        let sdk = sdk.unwrap_or(Path::new(SDK_PATH));
        let sdk = sdk.canonicalize().map_err(|_| {
            (
                Exit::Usage,
                format!(
                    "the airlock SDK is not at {}: pass --sdk DIR with the sdk/rust folder of an airlock checkout",
                    sdk.display()
                ),
            )
        })?;
        if !sdk.join("Cargo.toml").is_file() {
            return Err((
                Exit::Usage,
                format!(
                    "{} has no Cargo.toml: it is not the airlock SDK",
                    sdk.display()
                ),
            ));
        }
        sdk.display().to_string()
    } else {
        String::new()
    };
    if path.symlink_metadata().is_ok() {
        return Err((
            Exit::Usage,
            format!(
                "{} already exists; airlock new only creates a new folder",
                path.display()
            ),
        ));
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            (
                Exit::ToolFailed,
                format!("cannot create {}: {e}", parent.display()),
            )
        })?;
    }
    // `create_dir`, not `create_dir_all`: it fails if the folder appeared
    // meanwhile, so nothing is ever overwritten.
    std::fs::create_dir(path).map_err(|e| {
        (
            Exit::Usage,
            format!("cannot create {}: {e}", path.display()),
        )
    })?;
    let files = match lang {
        Lang::Rust => RUST,
        Lang::Python => PYTHON,
        Lang::Js => JS,
    };
    let snake = name.replace('-', "_");
    let written = write_all(
        path,
        files,
        &[("name", name), ("snake", &snake), ("sdk_path", &sdk_path)],
    );
    if let Err(err) = written {
        let _ = std::fs::remove_dir_all(path);
        return Err((Exit::ToolFailed, err));
    }
    Ok(files.len())
}

fn write_all(root: &Path, files: &[File], vars: &[(&str, &str)]) -> Result<(), String> {
    for (rel, text) in files {
        let mut text = (*text).to_string();
        for (key, value) in vars {
            text = text.replace(&format!("{{{{{key}}}}}"), value);
        }
        let file = root.join(rel);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(check_name("weather").is_ok());
        assert!(check_name("my-tool_2").is_ok());
        for bad in ["", "Weather", "2go", "a b", "-x", "ü", &"a".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn templates_have_no_unknown_placeholders() {
        const KNOWN: [&str; 3] = ["name", "snake", "sdk_path"];
        for (rel, text) in RUST.iter().chain(PYTHON).chain(JS) {
            // The SDK's helpers are copied as they are (Python's f-strings
            // write `{{…}}` for a brace): none may hold a placeholder that
            // the copy would fill in.
            let helper = rel.starts_with("airlock");
            let mut rest = *text;
            while let Some(at) = rest.find("{{") {
                let after = &rest[at + 2..];
                let end = after.find("}}").unwrap_or(after.len());
                let key = &after[..end];
                if helper {
                    assert!(
                        !KNOWN.contains(&key),
                        "{rel}: the copy would fill in {key:?}"
                    );
                } else {
                    assert!(KNOWN.contains(&key), "{rel}: unknown placeholder {key:?}");
                }
                rest = &after[end..];
            }
        }
    }

    /// The Python template's build installs the componentize-py that
    /// airlock's own examples build with (`sdk/python/requirements.txt`).
    #[test]
    fn python_build_pins_the_toolchain_of_the_examples() {
        let sdk = include_str!("../../../sdk/python/requirements.txt");
        let pin = sdk
            .lines()
            .find(|l| l.starts_with("componentize-py=="))
            .expect("sdk/python/requirements.txt pins componentize-py");
        let build = include_str!("../../templates/python/build.py");
        assert!(
            build.contains(&format!("COMPONENTIZE_PY = \"{pin}\"")),
            "runtime/templates/python/build.py must pin {pin}"
        );
    }

    /// The three templates' READMEs have the same sections, each with its
    /// HTTP build; the JS one builds as airlock's own `fetch` examples do,
    /// and the helper's QuickJS refusal names that command.
    #[test]
    fn every_template_documents_http_with_its_build() {
        let readme = |files: &[File]| {
            files
                .iter()
                .find(|(rel, _)| *rel == "README.md")
                .map(|(_, text)| *text)
                .expect("a README")
        };
        let sections = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| l.starts_with("## ") && *l != "## Dependencies")
                .map(str::to_string)
                .collect()
        };
        let (rust, python, js) = (readme(RUST), readme(PYTHON), readme(JS));
        assert_eq!(sections(rust), sections(python));
        assert_eq!(sections(js), sections(python));
        assert!(sections(js).contains(&"## HTTP requests".to_string()));
        assert!(python.contains("python3 build.py --http"));
        assert!(js.contains("npm run build:http"));
        assert!(rust.contains("cargo build --release --target wasm32-wasip2"));
        let package = JS
            .iter()
            .find(|(rel, _)| *rel == "package.json")
            .map(|(_, text)| *text)
            .expect("package.json");
        assert!(
            package.contains("\"build:http\": \"jco componentize app.js --wit wit --world-name server -d fetch-event --bundle"),
            "{package}"
        );
        let helper = include_str!("../../../sdk/js/airlock-tool.js");
        assert!(helper.contains("npm run build:http"));
    }

    #[test]
    fn refuses_an_existing_folder_and_writes_a_new_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("taken");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("keep.txt"), "mine").unwrap();
        let (exit, message) = create(&path, Lang::Python, None).unwrap_err();
        assert_eq!(exit, Exit::Usage);
        assert!(message.contains("already exists"), "{message}");
        assert_eq!(
            std::fs::read_to_string(path.join("keep.txt")).unwrap(),
            "mine"
        );

        let fresh = dir.path().join("sub/fresh-tool");
        assert_eq!(create(&fresh, Lang::Js, None).unwrap(), JS.len());
        let package = std::fs::read_to_string(fresh.join("package.json")).unwrap();
        assert!(package.contains("\"name\": \"fresh-tool\""));
        assert!(package.contains("-o fresh-tool.wasm"));
        assert!(fresh.join("wit/tool.wit").is_file());

        let rust = dir.path().join("rusty");
        create(&rust, Lang::Rust, None).unwrap();
        let manifest = std::fs::read_to_string(rust.join("Cargo.toml")).unwrap();
        assert!(!manifest.contains("{{"), "{manifest}");
        assert!(manifest.contains("sdk/rust"), "{manifest}");
    }
}
