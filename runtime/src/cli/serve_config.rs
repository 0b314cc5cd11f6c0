//! The serve configuration file (`airlock serve --config FILE`): the flags
//! of `serve` as TOML keys, so that a deployment is this file plus the
//! policy. A flag given on the command line wins over its key; paths in the
//! file are relative to the file's folder. `airlock check --config FILE`
//! validates it, and the policy it names.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The keys, named as the flags are (`max-calls = 64` is `--max-calls 64`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServeConfig {
    /// The PATH arguments: component files, folders, references.
    pub components: Option<Vec<PathBuf>>,
    pub policy: Option<PathBuf>,
    pub stdio: Option<bool>,
    pub listen: Option<SocketAddr>,
    pub allow_unauthenticated: Option<bool>,
    pub allow_host: Option<Vec<String>>,
    pub max_calls: Option<usize>,
    pub max_body: Option<usize>,
    pub max_connections: Option<usize>,
    pub max_streams: Option<usize>,
    pub body_timeout: Option<u64>,
    pub grace: Option<u64>,
    pub watch: Option<bool>,
    pub allow_empty: Option<bool>,
    pub load_wait: Option<f64>,
    pub no_cache: Option<bool>,
    pub lock: Option<PathBuf>,
    pub insecure_registry: Option<Vec<String>>,
    pub fetch_timeout: Option<u64>,
    pub fetch_min_rate: Option<u64>,
    /// The shared state of replicas (`redis://HOST:PORT/DB`).
    pub state: Option<String>,
}

impl ServeConfig {
    /// Reads `file`; the error names the file and, for a bad key or value,
    /// its line and column.
    pub fn load(file: &Path) -> Result<ServeConfig, String> {
        let text = std::fs::read_to_string(file)
            .map_err(|err| format!("cannot read {}: {err}", file.display()))?;
        let mut config = Self::parse(&text).map_err(|err| format!("{}: {err}", file.display()))?;
        let base = file.parent().unwrap_or(Path::new("."));
        config.resolve(base);
        Ok(config)
    }

    fn parse(text: &str) -> Result<ServeConfig, String> {
        let config: ServeConfig = toml::from_str(text).map_err(|err| {
            // toml's message is "TOML parse error at line L, column C" and
            // a picture of the line; keep both, on one indented block.
            err.to_string().trim_end().replace('\n', "\n  ")
        })?;
        if config.stdio == Some(true) && config.listen.is_some() {
            return Err("`stdio = true` and `listen` cannot both be set".into());
        }
        if let Some(state) = &config.state
            && !(state.starts_with("redis://")
                || state.starts_with("rediss://")
                || state.starts_with("unix://")
                || state.starts_with("redis+unix://"))
        {
            return Err(format!(
                "`state` is a Redis URL (redis://HOST:PORT/DB), not {state:?}"
            ));
        }
        if let Some(wait) = config.load_wait
            && !(wait.is_finite() && wait >= 0.0)
        {
            return Err(format!(
                "`load-wait` is a number of seconds, 0 or more, not {wait}"
            ));
        }
        if config.fetch_timeout == Some(0) {
            return Err(
                "`fetch-timeout` is a number of seconds, 1 or more (a fetch must be allowed \
                 some time), not 0"
                    .into(),
            );
        }
        Ok(config)
    }

    /// Paths relative to the file's folder, as the operator wrote them
    /// beside it; references (`oci://…`) stay as they are.
    fn resolve(&mut self, base: &Path) {
        let at = |p: &mut PathBuf| {
            if p.is_relative() && !p.to_string_lossy().contains("://") {
                *p = base.join(&*p);
            }
        };
        self.components.iter_mut().flatten().for_each(at);
        self.policy.iter_mut().for_each(at);
        self.lock.iter_mut().for_each(at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_reads_and_paths_are_relative_to_the_file() {
        let mut config = ServeConfig::parse(
            "components = [\"tools/\", \"oci://r.example/a/b:1\"]\npolicy = \"airlock.toml\"\n\
             listen = \"0.0.0.0:9000\"\nallow-host = [\"tools.internal\"]\nmax-calls = 8\n\
             max-body = 1024\ngrace = 3\nwatch = true\nallow-empty = true\nload-wait = 0.5\n\
             allow-unauthenticated = false\nno-cache = true\nlock = \"deploy.lock\"\n\
             insecure-registry = [\"localhost:5000\"]\n",
        )
        .expect("parses");
        config.resolve(Path::new("/etc/airlock"));
        assert_eq!(
            config.components,
            Some(vec![
                PathBuf::from("/etc/airlock/tools/"),
                PathBuf::from("oci://r.example/a/b:1")
            ])
        );
        assert_eq!(
            config.policy,
            Some(PathBuf::from("/etc/airlock/airlock.toml"))
        );
        assert_eq!(config.max_calls, Some(8));
        assert_eq!(config.load_wait, Some(0.5));
        assert_eq!(config.lock, Some(PathBuf::from("/etc/airlock/deploy.lock")));
    }

    #[test]
    fn an_unknown_key_or_a_wrong_type_is_refused_with_its_place() {
        let err = ServeConfig::parse("max-calls = 8\nmax_calls = 9\n").unwrap_err();
        assert!(err.contains("line 2, column 1"), "{err}");
        assert!(err.contains("unknown field `max_calls`"), "{err}");
        let err = ServeConfig::parse("grace = \"ten\"\n").unwrap_err();
        assert!(err.contains("line 1, column 9"), "{err}");
        let err = ServeConfig::parse("stdio = true\nlisten = \"127.0.0.1:1\"\n").unwrap_err();
        assert!(err.contains("cannot both"), "{err}");
        let err = ServeConfig::parse("load-wait = -1\n").unwrap_err();
        assert!(err.contains("0 or more"), "{err}");
    }

    #[test]
    fn the_fetch_bounds_read_and_a_zero_deadline_is_refused() {
        let config =
            ServeConfig::parse("fetch-timeout = 60\nfetch-min-rate = 0\n").expect("parses");
        assert_eq!(
            (config.fetch_timeout, config.fetch_min_rate),
            (Some(60), Some(0))
        );
        let err = ServeConfig::parse("fetch-timeout = 0\n").unwrap_err();
        assert!(
            err.contains("`fetch-timeout` is a number of seconds, 1 or more"),
            "{err}"
        );
        let err = ServeConfig::parse("fetch-min-rate = -1\n").unwrap_err();
        assert!(err.contains("line 1, column 18"), "{err}");
    }
}
