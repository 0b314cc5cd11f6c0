//! Resource URIs and RFC 6570 level-1 URI templates (`file:///notes/{name}`):
//! what a component may declare, and which template a URI read matches.
//!
//! Level 1 has only simple expansion: `{var}`, no operators (`+ # . / ; ? &`),
//! no prefixes (`:3`) or explosion (`*`), one variable per expression. Two
//! expressions side by side (`{a}{b}`) are refused too: a URI would match
//! them in more than one way. An expanded value holds no `/`, `?` or `#`
//! (simple expansion encodes them), so a variable matches within a segment.

/// Longest URI or template accepted (what clients reliably handle).
const MAX_URI: usize = 2048;

/// A checked template, split into literals and variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

/// Checks that `uri` is an absolute URI: a scheme (`ALPHA *( ALPHA /
/// DIGIT / + / - / . )`), a `:`, and no spaces or control characters.
pub fn check_uri(uri: &str) -> Result<(), String> {
    if uri.is_empty() {
        return Err("the URI is empty".into());
    }
    if uri.len() > MAX_URI {
        return Err(format!(
            "the URI is {} bytes long, more than {MAX_URI}",
            uri.len()
        ));
    }
    if let Some(bad) = uri.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "the URI {uri:?} contains {bad:?}; percent-encode it"
        ));
    }
    let scheme = uri.split_once(':').map(|(scheme, _)| scheme);
    let valid = scheme.is_some_and(|s| {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if !valid {
        return Err(format!(
            "{uri:?} is not an absolute URI: it must start with a scheme such as `file:`, \
             `https:` or `ui:` (e.g. `file:///notes/today.md`)"
        ));
    }
    Ok(())
}

impl UriTemplate {
    /// Parses and checks a level-1 template; the error says what is wrong.
    pub fn parse(template: &str) -> Result<UriTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find(['{', '}']) {
                Some(at) if rest.as_bytes()[at] == b'}' => {
                    return Err(format!(
                        "a `}}` without its `{{` at byte {}",
                        template.len() - rest.len() + at
                    ));
                }
                Some(at) => {
                    if at > 0 {
                        parts.push(Part::Literal(rest[..at].to_string()));
                    }
                    let after = &rest[at + 1..];
                    let end = after.find('}').ok_or_else(|| {
                        format!(
                            "the expression at byte {} has no closing `}}`",
                            template.len() - rest.len() + at
                        )
                    })?;
                    let name = &after[..end];
                    check_variable(name)?;
                    if matches!(parts.last(), Some(Part::Variable(_))) {
                        return Err(format!(
                            "`{{{name}}}` follows another expression directly; put a literal \
                             (e.g. `/`) between them so a URI matches one way"
                        ));
                    }
                    if parts.iter().any(|p| *p == Part::Variable(name.to_string())) {
                        return Err(format!("the variable `{name}` appears twice"));
                    }
                    parts.push(Part::Variable(name.to_string()));
                    rest = &after[end + 1..];
                }
                None => {
                    parts.push(Part::Literal(rest.to_string()));
                    rest = "";
                }
            }
        }
        match parts.first() {
            Some(Part::Literal(lead)) => {
                check_uri(lead).map_err(|_| {
                    format!(
                        "{template:?} does not start with a scheme such as `file:` (a template \
                         expands to an absolute URI, e.g. `file:///notes/{{name}}`)"
                    )
                })?;
            }
            _ => {
                return Err(format!(
                    "{template:?} does not start with a scheme such as `file:` (a template \
                     expands to an absolute URI, e.g. `file:///notes/{{name}}`)"
                ));
            }
        }
        if template.len() > MAX_URI {
            return Err(format!("the template is longer than {MAX_URI} bytes"));
        }
        if !parts.iter().any(|p| matches!(p, Part::Variable(_))) {
            return Err(format!(
                "{template:?} has no variable; declare it as a resource instead"
            ));
        }
        Ok(UriTemplate { parts })
    }

    /// The template's variables, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Variable(name) => Some(name.as_str()),
            Part::Literal(_) => None,
        })
    }

    /// The values of the variables when `uri` matches, else `None`.
    pub fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        let mut rest = uri;
        let mut values = Vec::new();
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Variable(name) => {
                    let end = match parts.peek() {
                        // Never empty, never across a `/`, `?` or `#`.
                        Some(Part::Literal(next)) => rest.get(1..)?.find(next.as_str())? + 1,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains(['/', '?', '#']) {
                        return None;
                    }
                    values.push((name.clone(), value.to_string()));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(values)
    }
}

/// A level-1 variable name: `varchar *( ["."] varchar )`, varchar being
/// `ALPHA / DIGIT / "_"` or a percent-encoded byte.
fn check_variable(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("an empty expression `{}`".into());
    }
    if let Some(op) = name.chars().next().filter(|c| "+#./;?&=,!@|".contains(*c)) {
        return Err(format!(
            "`{{{name}}}` uses the operator `{op}`, which is beyond RFC 6570 level 1; \
             write `{{{}}}`",
            name.trim_start_matches(|c| "+#./;?&=,!@|".contains(c))
        ));
    }
    if name.contains(',') {
        return Err(format!(
            "`{{{name}}}` names several variables; level 1 has one per expression"
        ));
    }
    if name.contains([':', '*']) {
        return Err(format!(
            "`{{{name}}}` has a prefix or explode modifier, which is beyond RFC 6570 level 1"
        ));
    }
    if name.starts_with('.') || name.ends_with('.') || name.contains("..") {
        return Err(format!(
            "`{{{name}}}`: a `.` must stand between two characters"
        ));
    }
    let bytes = name.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if bytes.len() > i + 2
                && bytes[i + 1].is_ascii_hexdigit()
                && bytes[i + 2].is_ascii_hexdigit() =>
            {
                i += 3;
            }
            b if b.is_ascii_alphanumeric() || b == b'_' || b == b'.' => i += 1,
            _ => {
                return Err(format!(
                    "`{{{name}}}`: a variable name may hold only A-Z, a-z, 0-9, `_`, `.` and \
                     %-escapes"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_must_be_absolute() {
        assert!(check_uri("file:///notes/a.md").is_ok());
        assert!(check_uri("ui://stock/chart").is_ok());
        assert!(check_uri("urn:isbn:0451450523").is_ok());
        assert!(
            check_uri("notes/a.md")
                .unwrap_err()
                .contains("not an absolute URI")
        );
        assert!(
            check_uri("1abc:x")
                .unwrap_err()
                .contains("not an absolute URI")
        );
        assert!(check_uri("file:///a b").unwrap_err().contains("' '"));
        assert!(check_uri("").unwrap_err().contains("empty"));
        assert!(check_uri(&format!("x:{}", "a".repeat(3000))).is_err());
    }

    #[test]
    fn level_one_templates_parse_and_others_say_why_not() {
        let t = UriTemplate::parse("test://template/{id}/data").expect("valid");
        assert_eq!(t.variables().collect::<Vec<_>>(), ["id"]);
        assert!(UriTemplate::parse("file:///{dir}/{name}.md").is_ok());
        assert!(UriTemplate::parse("x://{a.b}/{c%20d}").is_ok());
        let err = |t: &str| UriTemplate::parse(t).unwrap_err();
        assert!(err("file:///{+path}").contains("operator `+`"));
        assert!(err("file:///{#frag}").contains("operator `#`"));
        assert!(err("file:///{a,b}").contains("several variables"));
        assert!(err("file:///{name:3}").contains("prefix or explode"));
        assert!(err("file:///{list*}").contains("prefix or explode"));
        assert!(err("file:///{a}{b}").contains("follows another expression"));
        assert!(err("file:///{a}/{a}").contains("twice"));
        assert!(err("file:///{a").contains("no closing"));
        assert!(err("file:///a}").contains("without its"));
        assert!(err("file:///{}").contains("empty expression"));
        assert!(err("{scheme}://x").contains("does not start with a scheme"));
        assert!(err("notes/{name}").contains("does not start with a scheme"));
        assert!(err("file:///fixed").contains("no variable"));
        assert!(err("file:///{na-me}").contains("may hold only"));
    }

    #[test]
    fn uris_match_templates_within_a_segment() {
        let t = UriTemplate::parse("test://template/{id}/data").expect("valid");
        assert_eq!(
            t.matches("test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(t.matches("test://template//data"), None);
        assert_eq!(t.matches("test://template/1/2/data"), None);
        assert_eq!(t.matches("test://template/123/data/more"), None);
        assert_eq!(t.matches("test://other/123/data"), None);
        let tail = UriTemplate::parse("file:///notes/{name}").expect("valid");
        assert_eq!(
            tail.matches("file:///notes/today.md"),
            Some(vec![("name".into(), "today.md".into())])
        );
        assert_eq!(tail.matches("file:///notes/a/b"), None);
        assert_eq!(tail.matches("file:///notes/a?x=1"), None);
        let two = UriTemplate::parse("db://{table}/{row}.json").expect("valid");
        assert_eq!(
            two.matches("db://orders/7.json"),
            Some(vec![
                ("table".into(), "orders".into()),
                ("row".into(), "7".into())
            ])
        );
    }
}
