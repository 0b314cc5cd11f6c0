//! The plan of a confinement: the paths a serving process may use and how,
//! the TCP ports it may connect to and bind. It is worked out from the
//! policy and what serving needs ([`Serving`]) alone — nothing here reads
//! the disk or the environment — so `check` and `inspect` show exactly what
//! `serve` applies, and a process that serves only some components (a
//! [`Scope`]) is given only their grants.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use crate::policy::{FolderMode, HostPattern, Policy, Roots, Settings};
use crate::source::Source;

/// What a confined process may do with a path (and, for a folder,
/// everything beneath it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// Read files, list folders.
    Read,
    /// Write into files that exist (the audit log, appended to).
    Write,
    /// Read, create, change, rename and remove files and folders.
    ReadWrite,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "read-write",
        }
    }

    /// The access that allows both.
    fn widest(self, other: Access) -> Access {
        match (self, other) {
            (a, b) if a == b => a,
            _ => Access::ReadWrite,
        }
    }
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who needs a path or a port: shown with it, and the system's own files
/// (the same for every server) are shown as one line.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Need {
    /// The server itself: components, cache, store, lock, audit log,
    /// certificates, listener, registries, issuers, Redis.
    Server(String),
    /// A grant of the policy to a component's tools.
    Grant(String),
    /// What any process on this system reads: name lookups, TLS roots,
    /// libraries, devices.
    System(&'static str),
}

impl Need {
    fn text(&self) -> &str {
        match self {
            Need::Server(why) | Need::Grant(why) => why,
            Need::System(why) => why,
        }
    }
}

/// A path and what may be done with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRule {
    pub path: PathBuf,
    pub access: Access,
    /// Why, each need once (several grants may name one folder).
    pub needs: Vec<Need>,
}

/// A TCP port and who needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortRule {
    pub port: u16,
    pub needs: Vec<Need>,
}

/// The confinement of one serving process: everything it may reach. What is
/// not here is refused by the kernel once it is applied
/// ([`super::apply`]); on top, the system calls of [`super::DENIED_CALLS`]
/// are refused whatever the plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// In path order, one rule a path (the widest access asked for it).
    pub paths: Vec<PathRule>,
    /// Ports it may connect to (TCP), in order.
    pub connect: Vec<PortRule>,
    /// Ports it may bind (TCP): the listener's.
    pub bind: Vec<PortRule>,
}

/// Which components a process serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The whole server: the listener, OAuth, Redis, the audit log, and the
    /// grants of every section — also of components that arrive later
    /// (`--watch`), whose sections the policy already holds.
    Server,
    /// A process that serves only these components (by name): their grants,
    /// their sources, the compile cache and store; nothing of the front's.
    Components(Vec<String>),
}

/// What serving needs besides the grants: the settings of `serve`, and the
/// folders found for them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Serving {
    /// The PATHs served: files, folders, references.
    pub components: Vec<PathBuf>,
    /// `--watch`: files served may be replaced, so their folders are read.
    pub watch: bool,
    /// The compile cache's folder (none with `--no-cache`).
    pub cache: Option<PathBuf>,
    /// The store of fetched components.
    pub store: PathBuf,
    /// `airlock.lock`.
    pub lock: Option<PathBuf>,
    /// Registries spoken to over plain http (`--insecure-registry`).
    pub insecure_registries: Vec<String>,
    /// The folders holding `--tls-cert` and `--tls-key` (and, when they are
    /// links, their targets'): renewals replace the files.
    pub certificate_folders: Vec<PathBuf>,
    /// The HTTP listener; `None` serving stdio.
    pub listen: Option<SocketAddr>,
    /// `--state redis://…`.
    pub state: Option<String>,
    /// CA files and folders named by the environment (`AIRLOCK_CA_FILE`,
    /// `SSL_CERT_FILE`, `SSL_CERT_DIR`).
    pub ca_paths: Vec<PathBuf>,
    /// The OTLP endpoints traces and metrics are exported to.
    pub telemetry: Vec<String>,
}

/// Files every server reads after it has started: glibc's name lookup
/// (its configuration, and the NSS modules `nsswitch.conf` names, loaded
/// from the libraries' folders), randomness, `/dev/null`, and what the
/// standard library reads to count the CPUs a container may use.
const SYSTEM_READS: [(&str, &str); 15] = [
    ("/etc/resolv.conf", "name lookups"),
    ("/etc/hosts", "name lookups"),
    ("/etc/nsswitch.conf", "name lookups"),
    ("/etc/host.conf", "name lookups"),
    ("/etc/gai.conf", "name lookups"),
    ("/run/systemd/resolve", "name lookups"),
    ("/etc/ld.so.cache", "libraries"),
    ("/lib", "libraries"),
    ("/lib64", "libraries"),
    ("/usr/lib", "libraries"),
    ("/usr/lib64", "libraries"),
    ("/dev/urandom", "randomness"),
    ("/proc/self/pagemap", "memory resets"),
    ("/proc/self/cgroup", "CPU count"),
    ("/sys/fs/cgroup", "CPU count"),
];

/// Where the platform keeps its TLS roots (`tls = "system"`): what
/// `rustls-native-certs` reads, first use after the start.
const SYSTEM_ROOTS: [&str; 6] = [
    "/etc/ssl",
    "/etc/pki",
    "/etc/ca-certificates",
    "/usr/share/ca-certificates",
    "/usr/local/share/ca-certificates",
    "/etc/certs",
];

/// The port a DNS answer too long for UDP is fetched on again (TCP).
const DNS_PORT: u16 = 53;

impl Confinement {
    /// The confinement of a process serving `scope` under `policy` with
    /// `serving`'s settings.
    pub fn plan(policy: &Policy, serving: &Serving, scope: &Scope) -> Confinement {
        let mut plan = Builder::default();
        plan.components(policy, serving, scope);
        plan.grants(policy, scope);
        if let Some(cache) = &serving.cache {
            plan.path(cache, Access::ReadWrite, server("the compile cache"));
        }
        if scope == &Scope::Server {
            plan.front(policy, serving);
        }
        for (path, why) in SYSTEM_READS {
            plan.path(Path::new(path), Access::Read, Need::System(why));
        }
        plan.path(
            Path::new("/dev/null"),
            Access::ReadWrite,
            Need::System("/dev/null"),
        );
        if plan.names_hosts && !plan.connect.is_empty() {
            plan.port(DNS_PORT, Need::System("name lookups over TCP"));
        }
        plan.build()
    }

    /// The rule of one path, if the plan has one.
    pub fn path(&self, path: &Path) -> Option<&PathRule> {
        self.paths.iter().find(|rule| rule.path == path)
    }

    /// What `check`, `inspect --policy` and the serve log show: one line a
    /// rule, the system's files on one line at the end.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut system = Vec::new();
        for rule in &self.paths {
            let own: Vec<&str> = rule
                .needs
                .iter()
                .filter(|n| !matches!(n, Need::System(_)))
                .map(Need::text)
                .collect();
            if own.is_empty() {
                system.push(rule.path.display().to_string());
                continue;
            }
            lines.push(format!(
                "{:<10} {} ({})",
                rule.access.as_str(),
                rule.path.display(),
                own.join("; ")
            ));
        }
        for (what, ports) in [("connect", &self.connect), ("bind", &self.bind)] {
            let shown: Vec<String> = ports
                .iter()
                .map(|p| {
                    let needs: Vec<&str> = p.needs.iter().map(Need::text).collect();
                    format!("{} ({})", p.port, needs.join("; "))
                })
                .collect();
            let shown = match shown.is_empty() {
                true => "none".to_string(),
                false => shown.join(", "),
            };
            lines.push(format!("{what:<10} TCP {shown}"));
        }
        if !system.is_empty() {
            lines.push(format!("{:<10} {}", "system", system.join(", ")));
        }
        lines
    }
}

fn server(why: &str) -> Need {
    Need::Server(why.to_string())
}

/// A plan being put together: rules merged by path and by port.
#[derive(Default)]
struct Builder {
    paths: BTreeMap<PathBuf, (Access, Vec<Need>)>,
    connect: BTreeMap<u16, Vec<Need>>,
    bind: BTreeMap<u16, Vec<Need>>,
    /// Whether a destination is named by host name (so DNS may need TCP).
    names_hosts: bool,
}

impl Builder {
    fn path(&mut self, path: &Path, access: Access, need: Need) {
        let entry = self
            .paths
            .entry(path.to_path_buf())
            .or_insert((access, Vec::new()));
        entry.0 = entry.0.widest(access);
        if !entry.1.contains(&need) {
            entry.1.push(need);
        }
    }

    fn port(&mut self, port: u16, need: Need) {
        let needs = self.connect.entry(port).or_default();
        if !needs.contains(&need) {
            needs.push(need);
        }
    }

    /// The components' files and where fetched ones come from.
    fn components(&mut self, policy: &Policy, serving: &Serving, scope: &Scope) {
        let mut sources: Vec<(Source, bool)> = Vec::new();
        if scope == &Scope::Server {
            for path in &serving.components {
                if let Ok(source) = Source::from_path(path) {
                    sources.push((source, serving.watch));
                }
            }
        }
        for section in policy.components().filter(|c| in_scope(scope, &c.name)) {
            if let Some(source) = &section.source {
                sources.push((source.clone(), serving.watch));
            }
        }
        let mut fetched = false;
        for (source, watched) in sources {
            match source {
                Source::File(path) => self.component_file(&path, watched),
                Source::Oci(oci) => {
                    fetched = true;
                    self.registry(&oci.registry, oci.plain_http, serving);
                }
                Source::Url(url) => {
                    fetched = true;
                    self.names_hosts |= url.url.domain().is_some();
                    if let Some(port) = url.url.port_or_known_default() {
                        self.port(port, server(&format!("the source {}", url.url)));
                    }
                }
            }
        }
        if fetched {
            self.path(
                &serving.store,
                Access::ReadWrite,
                server("the store of fetched components"),
            );
            if let Some(folder) = serving.lock.as_deref().and_then(folder_of) {
                self.path(
                    &folder,
                    Access::ReadWrite,
                    server("airlock.lock, written when a tag is first recorded"),
                );
            }
        }
    }

    /// A component file or a folder of them; watched, a file's folder (a
    /// new version replaces the file).
    fn component_file(&mut self, path: &Path, watched: bool) {
        let is_wasm = path.extension().is_some_and(|e| e == "wasm");
        match (watched, is_wasm) {
            (true, true) => match folder_of(path) {
                Some(folder) => self.path(&folder, Access::Read, server("a watched component")),
                None => self.path(path, Access::Read, server("a watched component")),
            },
            (true, false) => self.path(path, Access::Read, server("watched components")),
            (false, _) => self.path(path, Access::Read, server("the components")),
        }
    }

    /// A registry: its port, and HTTPS (token services and blob
    /// redirects are elsewhere on 443).
    fn registry(&mut self, registry: &str, plain_http: bool, serving: &Serving) {
        let insecure = plain_http || serving.insecure_registries.iter().any(|r| r == registry);
        let (host, port) = split_port(registry);
        self.names_hosts |= host.parse::<std::net::IpAddr>().is_err();
        let port = port.unwrap_or(if insecure { 80 } else { 443 });
        self.port(port, server(&format!("the registry {registry}")));
        if !insecure {
            self.port(
                443,
                server(&format!("the registry {registry}'s tokens and downloads")),
            );
        }
    }

    /// The folders and hosts every section in scope grants: the component
    /// sections and their tool sections, and the defaults (which apply to
    /// components without a section of their own).
    fn grants(&mut self, policy: &Policy, scope: &Scope) {
        let mut granted: Vec<(String, Settings)> = Vec::new();
        let names: Vec<String> = match scope {
            Scope::Server => {
                granted.push((String::new(), policy.settings_for("", "")));
                policy.components().map(|c| c.name.clone()).collect()
            }
            Scope::Components(names) => names.clone(),
        };
        for name in names {
            granted.push((name.clone(), policy.settings_for(&name, "")));
            if let Some(section) = policy.component(&name) {
                for tool in section.tool_sections() {
                    granted.push((name.clone(), policy.settings_for(&name, tool)));
                }
            }
        }
        for (component, settings) in granted {
            let to = match component.is_empty() {
                true => "components without a section ([defaults])".to_string(),
                false => component,
            };
            for folder in &settings.folders {
                let access = match folder.mode {
                    FolderMode::ReadOnly => Access::Read,
                    FolderMode::ReadWrite => Access::ReadWrite,
                };
                let need = Need::Grant(format!("granted {} to {to}", folder.mode.as_str()));
                self.path(&folder.host, access, need);
            }
            for pattern in &settings.network {
                self.host(pattern, &to);
            }
            if settings.trust.roots == Roots::System {
                for path in SYSTEM_ROOTS {
                    self.path(Path::new(path), Access::Read, Need::System("TLS roots"));
                }
            }
            if let Some(ca) = &settings.trust.ca {
                let need = Need::Grant(format!("the CA bundle of {to}"));
                self.path(&ca.path, Access::Read, need);
            }
        }
    }

    fn host(&mut self, pattern: &HostPattern, to: &str) {
        self.names_hosts |= pattern.is_name();
        for port in pattern.ports() {
            self.port(port, Need::Grant(format!("granted to {to}: {pattern}")));
        }
    }

    /// What only the front of the server needs: its listener, certificate
    /// files, audit log, OAuth issuers and Redis.
    fn front(&mut self, policy: &Policy, serving: &Serving) {
        if let Some(listen) = serving.listen {
            self.bind
                .entry(listen.port())
                .or_default()
                .push(server("the listener"));
        }
        for folder in &serving.certificate_folders {
            let need = server("the certificate and key, read again when renewed");
            self.path(folder, Access::Read, need);
        }
        if let Some(audit) = policy.audit_path() {
            self.path(audit, Access::Write, server("the audit log"));
        }
        for path in &serving.ca_paths {
            self.path(
                path,
                Access::Read,
                server("CA certificates the environment names"),
            );
        }
        if let Some(oauth) = policy.oauth() {
            for issuer in &oauth.issuers {
                let Ok(url) = url::Url::parse(issuer) else {
                    continue;
                };
                self.names_hosts |= url.domain().is_some();
                if let Some(port) = url.port_or_known_default() {
                    self.port(port, server(&format!("the issuer {issuer}")));
                }
                // Its keys may be served elsewhere, over HTTPS.
                self.port(443, server(&format!("the issuer {issuer}'s keys")));
            }
        }
        if let Some(state) = &serving.state
            && let Ok(url) = url::Url::parse(state)
        {
            self.names_hosts |= url.domain().is_some();
            let port = url.port().unwrap_or(6379);
            self.port(port, server(&format!("the shared state at {state}")));
        }
        for endpoint in &serving.telemetry {
            let Ok(url) = url::Url::parse(endpoint) else {
                continue;
            };
            self.names_hosts |= url.domain().is_some();
            if let Some(port) = url.port_or_known_default() {
                self.port(port, server(&format!("the OTLP collector at {endpoint}")));
            }
        }
    }

    fn build(self) -> Confinement {
        let ports = |map: BTreeMap<u16, Vec<Need>>| {
            map.into_iter()
                .map(|(port, needs)| PortRule { port, needs })
                .collect()
        };
        Confinement {
            paths: self
                .paths
                .into_iter()
                .map(|(path, (access, needs))| PathRule {
                    path,
                    access,
                    needs,
                })
                .collect(),
            connect: ports(self.connect),
            bind: ports(self.bind),
        }
    }
}

fn in_scope(scope: &Scope, name: &str) -> bool {
    match scope {
        Scope::Server => true,
        Scope::Components(names) => names.iter().any(|n| n == name),
    }
}

/// The folder a file is in (`.` for a bare file name).
fn folder_of(path: &Path) -> Option<PathBuf> {
    match path.parent() {
        Some(parent) if parent.as_os_str().is_empty() => Some(PathBuf::from(".")),
        Some(parent) => Some(parent.to_path_buf()),
        None => None,
    }
}

/// `host:port` → (`host`, port); `[v6]:port` likewise.
fn split_port(registry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = registry.strip_prefix('[') {
        let (host, after) = rest.split_once(']').unwrap_or((rest, ""));
        return (host, after.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match registry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => (host, port.parse().ok()),
        _ => (registry, None),
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
