//! Where components named by reference come from by default: the store
//! folder, and TLS for registries and URLs.

use std::path::{Path, PathBuf};

use crate::policy::{CaBundle, Roots, Trust};
use crate::sandbox::CompileCache;
use crate::source::{Resolver, Store};

/// TLS for fetching components: the bundled (webpki) roots and the CA
/// bundle `ca_file` (else `$AIRLOCK_CA_FILE`), from the client
/// configurations the sandbox keeps for tools' https (`sandbox::tls`: one
/// crypto provider, one configuration per trust setting).
pub fn source_tls(ca_file: Option<&Path>) -> Result<tokio_rustls::TlsConnector, String> {
    let file = ca_file
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("AIRLOCK_CA_FILE").map(PathBuf::from));
    let ca = file
        .map(|f| CaBundle::read(&f).map_err(|e| format!("AIRLOCK_CA_FILE: {e}")))
        .transpose()?;
    let trust = Trust {
        roots: Roots::Bundled,
        ca,
    };
    crate::sandbox::tls_connector(&trust).map_err(|e| e.to_string())
}

/// The resolver a runtime starts with: the default store, no lock file,
/// [`source_tls`], HTTPS only, the environment's credentials.
pub fn default_resolver() -> Resolver {
    Resolver::new(default_store()).with_tls(source_tls(None))
}

/// The store: `$AIRLOCK_STORE_DIR`, else `store/` in the default compile
/// cache's folder (`~/.cache/airlock/store`; see [`CompileCache::default_dir`]
/// for the rules), else `airlock/store` in the temporary folder.
pub fn default_store() -> Store {
    if let Some(dir) = std::env::var_os("AIRLOCK_STORE_DIR") {
        return Store::new(dir);
    }
    match CompileCache::default_dir() {
        Ok(cache) => Store::new(cache.dir.join("store")),
        Err(_) => Store::new(std::env::temp_dir().join("airlock/store")),
    }
}
