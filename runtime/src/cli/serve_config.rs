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
    /// HTTPS on the listener: the certificate chain and its key (PEM).
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Traces and metrics to an OpenTelemetry collector (OTLP/HTTP).
    pub otlp_endpoint: Option<String>,
}

impl ServeConfig {
    /// Reads `file`; every error (all are reported, one a line) names the
    /// file and, for a bad key or value, its line and column.
    pub fn load(file: &Path) -> Result<ServeConfig, Vec<String>> {
        let text = std::fs::read_to_string(file)
            .map_err(|err| vec![format!("cannot read {}: {err}", file.display())])?;
        let mut config = Self::parse(&text).map_err(|errors| {
            let name = file.display();
            errors
                .into_iter()
                .map(|e| format!("{name}:{e}"))
                .collect::<Vec<_>>()
        })?;
        let base = file.parent().unwrap_or(Path::new("."));
        config.resolve(base);
        Ok(config)
    }

    /// The configuration, or every error as `LINE:COLUMN: message`: each
    /// key is read on its own, so one wrong key does not hide the next.
    fn parse(text: &str) -> Result<ServeConfig, Vec<String>> {
        use serde::de::IntoDeserializer as _;
        use toml::Spanned;
        use toml::de::{DeTable, DeValue};
        let place = |offset: usize| {
            let before = text.get(..offset).unwrap_or(text);
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("{line}:{column}")
        };
        let error = |e: toml::de::Error, fallback: usize| {
            let at = e.span().map_or(fallback, |s| s.start);
            format!("{}: {}", place(at), e.message().trim_end())
        };
        let (doc, syntax) = DeTable::parse_recoverable(text);
        if !syntax.is_empty() {
            return Err(syntax.into_iter().map(|e| error(e, 0)).collect());
        }
        let mut errors = Vec::new();
        let mut good = DeTable::new();
        let whole = 0..text.len();
        for (key, value) in doc.into_inner() {
            let mut one = DeTable::new();
            one.insert(key.clone(), value.clone());
            let one = Spanned::new(whole.clone(), DeValue::Table(one));
            match ServeConfig::deserialize(one.into_deserializer()) {
                Ok(_) => {
                    good.insert(key, value);
                }
                Err(e) => errors.push(error(e, key.span().start)),
            }
        }
        let good = Spanned::new(whole, DeValue::Table(good));
        let config = ServeConfig::deserialize(good.into_deserializer()).unwrap_or_else(|e| {
            errors.push(error(e, 0));
            ServeConfig::default()
        });
        // No place of their own: `load` makes them "FILE: message".
        errors.extend(config.meaning_errors().into_iter().map(|e| format!(" {e}")));
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }

    /// What well-typed keys may still get wrong together.
    fn meaning_errors(&self) -> Vec<String> {
        let mut errors = Vec::new();
        if self.stdio == Some(true) && self.listen.is_some() {
            errors.push("`stdio = true` and `listen` cannot both be set".into());
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            errors.push(
                "`tls-cert` and `tls-key` go together: the certificate and its key (PEM)".into(),
            );
        }
        if let Some(state) = &self.state
            && !(state.starts_with("redis://")
                || state.starts_with("rediss://")
                || state.starts_with("unix://")
                || state.starts_with("redis+unix://"))
        {
            errors.push(format!(
                "`state` is a Redis URL (redis://HOST:PORT/DB), not {state:?}"
            ));
        }
        if let Some(wait) = self.load_wait
            && !(wait.is_finite() && wait >= 0.0)
        {
            errors.push(format!(
                "`load-wait` is a number of seconds, 0 or more, not {wait}"
            ));
        }
        for (key, value) in [
            ("max-calls", self.max_calls),
            ("max-connections", self.max_connections),
            ("max-streams", self.max_streams),
            ("body-timeout", self.body_timeout.map(|t| t as usize)),
        ] {
            if value == Some(0) {
                errors.push(format!(
                    "`{key}` must be 1 or more (0 would refuse every request), not 0"
                ));
            }
        }
        if self.fetch_timeout == Some(0) {
            errors.push(
                "`fetch-timeout` is a number of seconds, 1 or more (a fetch must be allowed \
                 some time), not 0"
                    .into(),
            );
        }
        errors
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
        self.tls_cert.iter_mut().for_each(at);
        self.tls_key.iter_mut().for_each(at);
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
             insecure-registry = [\"localhost:5000\"]\n\
             tls-cert = \"tls/cert.pem\"\ntls-key = \"/keys/key.pem\"\n",
        )
        .expect("parses");
        config.resolve(Path::new("/etc/airlock"));
        assert_eq!(
            config.tls_cert,
            Some(PathBuf::from("/etc/airlock/tls/cert.pem"))
        );
        assert_eq!(config.tls_key, Some(PathBuf::from("/keys/key.pem")));
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
        assert_eq!(err.len(), 1, "{err:?}");
        assert!(
            err[0].starts_with("2:1: unknown field `max_calls`"),
            "{err:?}"
        );
        let err = ServeConfig::parse("grace = \"ten\"\n").unwrap_err();
        assert!(err[0].starts_with("1:9: "), "{err:?}");
        let err = ServeConfig::parse("stdio = true\nlisten = \"127.0.0.1:1\"\n").unwrap_err();
        assert!(err[0].contains("cannot both"), "{err:?}");
        let err = ServeConfig::parse("load-wait = -1\n").unwrap_err();
        assert!(err[0].contains("0 or more"), "{err:?}");
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
            err[0].contains("`fetch-timeout` is a number of seconds, 1 or more"),
            "{err:?}"
        );
        let err = ServeConfig::parse("max-streams = 0\nbody-timeout = 0\nmax-connections = 2\n")
            .unwrap_err();
        assert_eq!(err.len(), 2, "{err:?}");
        assert!(
            err[0].contains("`max-streams` must be 1 or more"),
            "{err:?}"
        );
        assert!(
            err[1].contains("`body-timeout` must be 1 or more"),
            "{err:?}"
        );
        let err = ServeConfig::parse("fetch-min-rate = -1\n").unwrap_err();
        assert!(err[0].starts_with("1:18: "), "{err:?}");
    }

    /// Every wrong key at once, not one a run.
    #[test]
    fn every_error_is_reported_at_once() {
        let err = ServeConfig::parse(
            "max_calls = 8\ngrace = \"ten\"\nwatch = true\nlisten = \"here\"\nstate = \"x\"\n",
        )
        .unwrap_err();
        assert_eq!(err.len(), 4, "{err:?}");
        assert!(
            err[0].starts_with("1:1: unknown field `max_calls`"),
            "{err:?}"
        );
        assert!(err[1].starts_with("2:9: "), "{err:?}");
        assert!(err[2].starts_with("4:10: "), "{err:?}");
        assert!(err[3].contains("`state` is a Redis URL"), "{err:?}");
    }
}
