//! `#[skills("folder")]`: bundles the Agent Skills in a folder of the crate
//! (relative to its `Cargo.toml`) into the component. Each folder directly
//! inside is one skill, named after it, with a `SKILL.md` at its root; every
//! file in it (hidden files aside) is embedded with `include_bytes!`, so
//! editing one rebuilds the component. The runtime checks the front matter
//! at load; what is checked here is what a build can tell at once.

use std::path::{Path, PathBuf};

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ItemStruct, LitStr};

/// The most files and bytes a skill may hold (the MCP Skills extension's
/// limits, which the runtime enforces too).
const MAX_FILES: usize = 512;
const MAX_BYTES: u64 = 16 * 1024 * 1024;

pub fn expand(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    let folder: LitStr = syn::parse2(attr).map_err(|e| {
        syn::Error::new(
            e.span(),
            "expected the skills' folder, relative to Cargo.toml: #[skills(\"skills\")]",
        )
    })?;
    let item: ItemStruct = syn::parse2(item)?;
    if !matches!(item.fields, syn::Fields::Unit) {
        return Err(syn::Error::new_spanned(
            &item,
            "#[skills] marks a unit struct: `struct Skills;`",
        ));
    }
    let error = |message: String| syn::Error::new(folder.span(), message);
    let manifest = std::env::var("CARGO_MANIFEST_DIR")
        .map_err(|_| error("CARGO_MANIFEST_DIR is not set: build with cargo".into()))?;
    let root = Path::new(&manifest).join(folder.value());
    let skills = list(&root).map_err(error)?;
    if skills.is_empty() {
        return Err(error(format!(
            "{} holds no skill: put each in a folder of its own, with a SKILL.md",
            root.display()
        )));
    }
    let mut entries = Vec::new();
    for skill in skills {
        let name = file_name(&skill);
        check_name(&name).map_err(|rule| error(format!("skill folder {name:?}: {rule}")))?;
        let mut files = Vec::new();
        walk(&skill, &skill, &mut files).map_err(error)?;
        if !files.iter().any(|(path, _)| path == "SKILL.md") {
            return Err(error(format!(
                "skill folder {name:?} has no SKILL.md at its root: add one (YAML front matter \
                 with `name: {name}` and a `description`, then the instructions)"
            )));
        }
        if files.len() > MAX_FILES {
            return Err(error(format!(
                "skill {name:?} holds {} files, more than the {MAX_FILES} a skill may",
                files.len()
            )));
        }
        let mut total = 0u64;
        for (path, file) in &files {
            total += std::fs::metadata(file).map(|m| m.len()).unwrap_or(0);
            let file = file.to_string_lossy().into_owned();
            entries.push(quote! {
                ::airlock_sdk::SkillFile {
                    skill: #name,
                    path: #path,
                    bytes: ::core::include_bytes!(#file),
                }
            });
        }
        if total > MAX_BYTES {
            return Err(error(format!(
                "skill {name:?} holds {total} bytes, more than the 16 MiB a skill may"
            )));
        }
    }
    let ident = &item.ident;
    Ok(quote! {
        #item

        impl ::airlock_sdk::Skills for #ident {
            const FILES: &'static [::airlock_sdk::SkillFile] = &[#(#entries),*];
        }

        impl ::airlock_sdk::Export for #ident {
            const ENTRY: ::airlock_sdk::Entry =
                ::airlock_sdk::Entry::Skills(<#ident as ::airlock_sdk::Skills>::FILES);
        }
    })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The skill folders directly inside `root`, by name.
fn list(root: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(root)
        .map_err(|e| format!("cannot read the skills' folder {}: {e}", root.display()))?;
    let mut skills: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !file_name(p).starts_with('.'))
        .collect();
    skills.sort();
    Ok(skills)
}

/// Every file under `dir`, hidden ones aside, as (path inside `skill`,
/// absolute path), in path order.
fn walk(skill: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| !file_name(p).starts_with('.'))
        .collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            walk(skill, &path, files)?;
            continue;
        }
        let relative = path
            .strip_prefix(skill)
            .map_err(|_| format!("{} is outside its skill", path.display()))?;
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let absolute = path
            .canonicalize()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        files.push((parts.join("/"), absolute));
    }
    Ok(())
}

/// The Agent Skills rule for a skill's name (and so its folder's).
fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if valid {
        Ok(())
    } else {
        Err(
            "a skill's name is 1 to 64 lowercase letters, digits and single hyphens, not \
             starting or ending with one: rename the folder"
                .into(),
        )
    }
}
