//! [`Secrecy`]: where the secrets sit inside the values of one Puppet type
//! (or one desired value), as a tree.

/// Where the secrets sit inside the values of one Puppet type.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Secrecy {
    /// The whole value is secret (`Sensitive[…]`).
    pub whole: bool,
    /// Struct members by lowercase name.
    pub members: Vec<(String, Secrecy)>,
    /// Array elements and Hash values.
    pub items: Option<Box<Secrecy>>,
}

impl Secrecy {
    /// Nothing secret: `Secrecy::default()`, as a constant.
    pub(crate) const fn public() -> Secrecy {
        Secrecy {
            whole: false,
            members: Vec::new(),
            items: None,
        }
    }

    /// All of it secret, as a constant.
    pub(crate) const fn whole() -> Secrecy {
        Secrecy {
            whole: true,
            members: Vec::new(),
            items: None,
        }
    }

    /// Where an attribute's secrets sit: its Puppet type says (see
    /// [`super::secrecy_of_type`]), and a credential's password is secret
    /// whatever the type says. Computed once, as the type definition is
    /// read (`Attribute::secrecy`).
    pub fn of_attribute(type_string: &str, credential: bool) -> Secrecy {
        let secrecy = super::secrecy_of_type(type_string);
        if credential && secrecy.member("password").is_none() {
            return secrecy.merge(Secrecy {
                members: vec![("password".into(), Secrecy::whole())],
                ..Secrecy::default()
            });
        }
        secrecy
    }

    pub fn is_public(&self) -> bool {
        !self.whole
            && self.members.iter().all(|(_, s)| s.is_public())
            && self.items.as_deref().is_none_or(Secrecy::is_public)
    }

    /// What is secret under either (Variant alternatives, Tuple elements).
    pub(crate) fn merge(mut self, other: Secrecy) -> Secrecy {
        self.whole |= other.whole;
        for (name, secrecy) in other.members {
            match self.members.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => slot.1 = std::mem::take(&mut slot.1).merge(secrecy),
                None => self.members.push((name, secrecy)),
            }
        }
        self.items = match (self.items.take(), other.items) {
            (Some(a), Some(b)) => Some(Box::new(a.merge(*b))),
            (a, b) => a.or(b),
        };
        self
    }

    /// A member by name, without case: the type's names are ASCII, but a
    /// desired hash's keys (see [`super::secrecy_of_value`]) may be any
    /// text, and PowerShell compares hashtable keys ignoring case beyond
    /// ASCII too.
    pub(crate) fn member(&self, name: &str) -> Option<&Secrecy> {
        self.members
            .iter()
            .find(|(n, _)| same_name(n, name))
            .map(|(_, s)| s)
    }
}

/// Two names equal without case, Unicode's lowercase mapping beyond ASCII.
fn same_name(a: &str, b: &str) -> bool {
    if a.is_ascii() && b.is_ascii() {
        return a.eq_ignore_ascii_case(b);
    }
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}
