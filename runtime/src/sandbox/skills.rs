//! The skills a component carries (contract 0.1.2, `skills.describe`),
//! read once at load under [`super::DESCRIBE_LIMITS`] like its tools. What
//! comes back is only bytes: the catalog checks them and computes their
//! digests (`catalog/skills.rs`), and they are served from memory, so no
//! instance ever runs to read a skill.

use wasmtime::component::TypedFunc;

use super::bindings::skills;
use super::{CallState, RunError, Sandbox, ToolPre};
use crate::offer::DescribedSkill;

impl Sandbox {
    /// The skills of a component of world `server` (none for one built
    /// against 0.1.0 or 0.1.1, which has no `skills` export).
    pub fn describe_skills(
        &self,
        pre: &ToolPre<CallState>,
    ) -> Result<Vec<DescribedSkill>, RunError> {
        let Some(describe) = pre.offers().skills else {
            return Ok(Vec::new());
        };
        let mut run = self.start_listing(pre.engine())?;
        let result = (|| -> wasmtime::Result<Vec<skills::Skill>> {
            let instance = pre.instantiate(&mut run.store)?;
            let f: TypedFunc<(), (Vec<skills::Skill>,)> =
                pre.typed(&mut run.store, &instance, &describe)?;
            Ok(f.call(&mut run.store, ())?.0)
        })();
        let listed = run.finish(result)?;
        Ok(listed
            .into_iter()
            .map(|skill| DescribedSkill {
                path: skill.path,
                files: skill
                    .files
                    .into_iter()
                    .map(|file| (file.path, file.bytes))
                    .collect(),
            })
            .collect())
    }
}
