//! Skills a component carries: Agent Skills (a folder with a `SKILL.md` and
//! the files it refers to) that [`#[skills]`](crate::skills) bundled into
//! the component when it was built. The runtime reads them once at load,
//! checks them, computes their digests and serves them itself (the MCP
//! Skills extension); no code of the component runs to read one.

/// One file of a bundled skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillFile {
    /// The skill it belongs to: its folder's name, e.g. `catalog-pricing`.
    pub skill: &'static str,
    /// Its path inside the skill's folder, `/`-separated, e.g. `SKILL.md`.
    pub path: &'static str,
    /// Its bytes, as they were on disk when the component was built.
    pub bytes: &'static [u8],
}

/// One skill as the contract's `skills.describe` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Where it is served: `skill://<path>/SKILL.md`.
    pub path: String,
    /// `(path inside the skill, bytes)`, `SKILL.md` included.
    pub files: Vec<(String, Vec<u8>)>,
}

/// What `#[skills("folder")]` generated: the bundled files of every skill
/// in the folder.
pub trait Skills {
    /// Every file of every skill, in the order of the skills' names.
    const FILES: &'static [SkillFile];
}

/// Groups `files` into their skills, keeping their order.
pub(crate) fn group(files: impl Iterator<Item = SkillFile>) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    for file in files {
        let entry = (file.path.to_owned(), file.bytes.to_vec());
        match skills.iter_mut().find(|s| s.path == file.skill) {
            Some(skill) => skill.files.push(entry),
            None => skills.push(Skill {
                path: file.skill.to_owned(),
                files: vec![entry],
            }),
        }
    }
    skills
}
