//! The DSC (MOF/CIM) type of a property, parsed once from the type
//! definition's `mof_type` into [`CimType`], an enum that every place
//! deciding by the type matches without a catch-all, so that a new value
//! type fails to compile wherever it is not handled (docs/architecture.md,
//! "Where does a change go": "a new CIM value type").

/// One CIM value type: the element type of a MOF type string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CimType {
    Boolean,
    Char16,
    String,
    DateTime,
    UInt8,
    SInt8,
    UInt16,
    SInt16,
    UInt32,
    SInt32,
    UInt64,
    SInt64,
    Real32,
    Real64,
    /// `PSCredential`: a credential (inside a CIM instance, an
    /// `MSFT_Credential` instance).
    Credential,
    /// An embedded instance: of the named class when the type definition
    /// says `mof_is_embedded` (`MSFT_Foo`), or of no class said (MOF's
    /// `Instance`, and the members of a Puppet `Struct`).
    Instance(Option<String>),
    /// A name this library does not know, not embedded: passed untyped.
    Unknown(String),
}

impl CimType {
    /// The type a MOF name stands for: MOF's `uint8` … `sint64`, `int16` …
    /// `int64` as some schemas spell them, `real32`, `real64`, `char16`,
    /// `boolean`, `string`, `datetime`, `PSCredential`, `Instance`, without
    /// case. An embedded property (`mof_is_embedded`) is an instance of
    /// the class it names, whatever the name, but a credential stays a
    /// credential: so its script makes a CIM instance of that class.
    pub fn parse(name: &str, embedded: bool) -> CimType {
        let lower = name.trim().to_ascii_lowercase();
        if lower == "pscredential" {
            return CimType::Credential;
        }
        if embedded {
            return CimType::Instance(Some(name.trim().to_owned()));
        }
        match lower.as_str() {
            "boolean" => CimType::Boolean,
            "char16" => CimType::Char16,
            "string" => CimType::String,
            "datetime" => CimType::DateTime,
            "uint8" => CimType::UInt8,
            "sint8" => CimType::SInt8,
            "uint16" => CimType::UInt16,
            "sint16" | "int16" => CimType::SInt16,
            "uint32" => CimType::UInt32,
            "sint32" | "int32" => CimType::SInt32,
            "uint64" => CimType::UInt64,
            "sint64" | "int64" => CimType::SInt64,
            "real32" => CimType::Real32,
            "real64" => CimType::Real64,
            "instance" => CimType::Instance(None),
            _ => CimType::Unknown(name.trim().to_owned()),
        }
    }
}

/// A DSC (MOF/CIM) type as the type schema names it: `String[]`,
/// `PSCredential`, `MSFT_Foo[]`. Parsed once, here: the name as given is
/// kept (pwshlib 2.x passes it on), its element type (the name trimmed and
/// without the `[]` of an array) is a [`CimType`], and whether it is an
/// array. Every question about the type asks the element type, so the
/// attribute and the parameter built from it cannot disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MofType {
    text: String,
    element: CimType,
    array: bool,
}

impl MofType {
    /// `text` as the type definition gives it; `embedded` is its
    /// `mof_is_embedded`.
    pub fn parse(text: &str, embedded: bool) -> MofType {
        let trimmed = text.trim();
        let element = trimmed.trim_end_matches("[]");
        MofType {
            text: text.to_owned(),
            element: CimType::parse(element, embedded),
            array: element.len() < trimmed.len(),
        }
    }

    /// The name as the type schema gives it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The element type: `MSFT_Foo` for `MSFT_Foo[]`.
    pub fn element(&self) -> &CimType {
        &self.element
    }

    pub fn is_array(&self) -> bool {
        self.array
    }

    pub fn is_credential(&self) -> bool {
        self.element == CimType::Credential
    }

    pub fn is_datetime(&self) -> bool {
        self.element == CimType::DateTime
    }

    /// The CIM class of an embedded instance (`MSFT_Foo[]` → `MSFT_Foo`);
    /// None when not embedded, and for a credential (no CIM instance).
    pub fn cim_class(&self) -> Option<&str> {
        match &self.element {
            CimType::Instance(class) => class.as_deref(),
            CimType::Boolean
            | CimType::Char16
            | CimType::String
            | CimType::DateTime
            | CimType::UInt8
            | CimType::SInt8
            | CimType::UInt16
            | CimType::SInt16
            | CimType::UInt32
            | CimType::SInt32
            | CimType::UInt64
            | CimType::SInt64
            | CimType::Real32
            | CimType::Real64
            | CimType::Credential
            | CimType::Unknown(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mof_type_is_parsed_once_trimmed_and_without_its_array_suffix() {
        let credential = MofType::parse(" PSCredential ", true);
        assert!(credential.is_credential() && !credential.is_array());
        assert_eq!(credential.as_str(), " PSCredential ");
        assert_eq!(credential.cim_class(), None);
        let credentials = MofType::parse("pscredential[]", false);
        assert!(credentials.is_credential() && credentials.is_array());
        let instances = MofType::parse("MSFT_Foo[] ", true);
        assert_eq!(
            instances.element(),
            &CimType::Instance(Some("MSFT_Foo".into()))
        );
        assert!(instances.is_array());
        assert_eq!(instances.cim_class(), Some("MSFT_Foo"));
        assert_eq!(MofType::parse("MSFT_Foo[] ", false).cim_class(), None);
        assert!(MofType::parse("DateTime[]", false).is_datetime());
        assert_eq!(MofType::parse("SInt64", false).element(), &CimType::SInt64);
        assert_eq!(MofType::parse("Int32", false).element(), &CimType::SInt32);
        assert_eq!(MofType::parse("Real32", false).element(), &CimType::Real32);
        assert_eq!(
            MofType::parse("Weird", false).element(),
            &CimType::Unknown("Weird".into())
        );
        assert_eq!(MofType::parse("Instance", false).cim_class(), None);
    }
}
