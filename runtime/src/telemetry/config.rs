//! Whether and where to export: the standard OpenTelemetry environment
//! (`OTEL_EXPORTER_OTLP_ENDPOINT` and its per-signal forms,
//! `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER`, `OTEL_SERVICE_NAME`; the
//! SDK reads the sampler, batching and headers variables itself) and
//! `serve`'s `--otlp-endpoint` (key `otlp-endpoint`), which wins over the
//! environment's endpoint. Nothing configured: nothing exported.

use std::collections::BTreeSet;

/// What `serve` was asked to export to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    /// The OTLP/HTTP base URL (`http://collector:4318`): traces go to
    /// `/v1/traces`, metrics to `/v1/metrics` under it.
    pub endpoint: Option<String>,
    /// Where traces and metrics go, when the environment names the
    /// per-signal URLs instead (`None`: under `endpoint`).
    pub traces: Option<String>,
    pub metrics: Option<String>,
}

/// A setting that cannot work, with what to do about it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error(
        "the OTLP endpoint {0:?} is not an http:// or https:// URL: give the collector's \
         OTLP/HTTP address, such as http://127.0.0.1:4318"
    )]
    NotHttp(String),
}

impl Settings {
    /// The settings from `flag` (serve's `--otlp-endpoint`, first) and the
    /// process's environment; `None` when nothing asks for an export.
    pub fn resolve(flag: Option<&str>) -> Result<Option<Settings>, ConfigError> {
        Self::from_vars(flag, |name| std::env::var(name).ok())
    }

    /// Like [`Self::resolve`], with `var` for the environment.
    pub fn from_vars(
        flag: Option<&str>,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Settings>, ConfigError> {
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        let settings = Settings {
            endpoint: flag
                .map(str::to_string)
                .or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT")),
            traces: set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
            metrics: set("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"),
        };
        if settings.endpoint.is_none() && settings.traces.is_none() && settings.metrics.is_none() {
            return Ok(None);
        }
        for url in settings.urls() {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::NotHttp(url.to_string()));
            }
        }
        Ok(Some(settings))
    }

    /// The traces' URL.
    pub fn traces_url(&self) -> Option<String> {
        self.traces.clone().or_else(|| self.under("v1/traces"))
    }

    /// The metrics' URL.
    pub fn metrics_url(&self) -> Option<String> {
        self.metrics.clone().or_else(|| self.under("v1/metrics"))
    }

    fn under(&self, path: &str) -> Option<String> {
        let base = self.endpoint.as_deref()?;
        Some(format!("{}/{path}", base.trim_end_matches('/')))
    }

    /// Every URL exported to, each once (for the confinement's ports).
    pub fn urls(&self) -> BTreeSet<&str> {
        [&self.endpoint, &self.traces, &self.metrics]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn nothing_configured_exports_nothing() {
        assert_eq!(Settings::from_vars(None, env(&[])), Ok(None));
        assert_eq!(
            Settings::from_vars(None, env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])),
            Ok(None)
        );
    }

    #[test]
    fn the_flag_wins_over_the_environment_and_paths_follow_otlp_http() {
        let vars = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318")];
        let s = Settings::from_vars(Some("http://flag:4318/"), env(&vars))
            .expect("valid")
            .expect("on");
        assert_eq!(
            s.traces_url().as_deref(),
            Some("http://flag:4318/v1/traces")
        );
        assert_eq!(
            s.metrics_url().as_deref(),
            Some("http://flag:4318/v1/metrics")
        );
        let vars = [("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://t:443/x")];
        let s = Settings::from_vars(None, env(&vars))
            .expect("valid")
            .expect("on");
        assert_eq!(s.traces_url().as_deref(), Some("https://t:443/x"));
        assert_eq!(s.metrics_url(), None);
    }

    #[test]
    fn disabled_sdk_and_bad_urls() {
        let vars = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"),
            ("OTEL_SDK_DISABLED", "true"),
        ];
        assert_eq!(Settings::from_vars(None, env(&vars)), Ok(None));
        let err = Settings::from_vars(Some("collector:4318"), env(&[])).unwrap_err();
        assert!(err.to_string().contains("http://127.0.0.1:4318"), "{err}");
    }
}
