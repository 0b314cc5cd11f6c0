//! A plan's paths and ports as a Landlock ruleset, entered by the calling
//! thread (and every thread it starts after): the filesystem and TCP access
//! of the running kernel's ABI are all handled — what the plan does not
//! name is refused — best effort down to older ABIs (a right the kernel
//! does not know is neither handled nor granted). The scopes of ABI 6 keep
//! the process from signalling processes outside its domain and from
//! reaching abstract Unix sockets outside it.

use landlock::{
    ABI, Access as _, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible as _, LandlockStatus,
    NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr as _, RulesetCreatedAttr as _,
    RulesetStatus, Scope,
};

use super::plan::{Access, Confinement};
use super::{ConfineError, Landlock};

/// The newest ABI this build knows: its rights are handled where the
/// kernel has them, dropped where it has not.
const NEWEST: ABI = ABI::V10;

/// What each access of a plan allows, on a folder (a file gets the part of
/// it that applies to files).
fn rights(access: Access) -> BitFlags<AccessFs> {
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    match access {
        Access::Read => read,
        Access::Write => AccessFs::WriteFile.into(),
        // No execution, no device, FIFO or socket nodes.
        Access::ReadWrite => {
            read | AccessFs::WriteFile
                | AccessFs::RemoveDir
                | AccessFs::RemoveFile
                | AccessFs::MakeDir
                | AccessFs::MakeReg
                | AccessFs::MakeSym
                | AccessFs::Refer
                | AccessFs::Truncate
        }
    }
}

/// Enters the Landlock domain of `plan`. Paths that do not exist are
/// skipped (and returned, for the log): nothing there to reach.
pub(super) fn restrict(plan: &Confinement) -> Result<(Landlock, Vec<String>), ConfineError> {
    let failed =
        |what: &str, err: &dyn std::fmt::Display| ConfineError::Landlock(format!("{what}: {err}"));
    let mut skipped = Vec::new();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(NEWEST))
        .map_err(|e| failed("the filesystem rights", &e))?
        .handle_access(AccessNet::from_all(NEWEST))
        .map_err(|e| failed("the TCP rights", &e))?
        .scope(Scope::from_all(NEWEST))
        .map_err(|e| failed("the scopes", &e))?
        .create()
        .map_err(|e| failed("creating the ruleset", &e))?;
    for rule in &plan.paths {
        let Ok(fd) = PathFd::new(&rule.path) else {
            skipped.push(rule.path.display().to_string());
            continue;
        };
        let is_dir = std::fs::metadata(&rule.path).is_ok_and(|m| m.is_dir());
        let mut access = rights(rule.access);
        if !is_dir {
            access &= AccessFs::from_file(NEWEST);
        }
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| failed(&format!("the rule for {}", rule.path.display()), &e))?;
    }
    for (ports, access) in [
        (&plan.connect, AccessNet::ConnectTcp),
        (&plan.bind, AccessNet::BindTcp),
    ] {
        for port in ports {
            ruleset = ruleset
                .add_rule(NetPort::new(port.port, access))
                .map_err(|e| failed(&format!("the rule for TCP port {}", port.port), &e))?;
        }
    }
    let status = ruleset
        .restrict_self()
        .map_err(|e| failed("entering the domain", &e))?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => Some(effective_abi as i32),
        LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => None,
    };
    let landlock = match (status.ruleset, abi) {
        (RulesetStatus::NotEnforced, _) | (_, None) => Landlock::Unsupported,
        (RulesetStatus::FullyEnforced, Some(abi)) => Landlock::Enforced { abi, full: true },
        (RulesetStatus::PartiallyEnforced, Some(abi)) => Landlock::Enforced { abi, full: false },
    };
    Ok((landlock, skipped))
}
