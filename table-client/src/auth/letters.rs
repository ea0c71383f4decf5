//! Sets of one-letter flags as SAS parameters carry them (`sp=raud`, `ss=t`, `srt=sco`): one
//! struct of `bool`s per set, read from letters in any order and printed in the service's
//! order, which is the order the fields are declared in.

/// Declares a letter set: the struct, `all`, `parse`, `is_empty` and `Display`.
macro_rules! letter_set {
    (
        $(#[$doc:meta])*
        $name:ident, $what:literal {
            $($(#[$field_doc:meta])* $field:ident = $letter:literal,)+
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
        pub struct $name {
            $($(#[$field_doc])* pub $field: bool,)+
        }

        impl $name {
            #[doc = concat!("Every letter (`", $($letter,)+ "`).")]
            pub fn all() -> Self {
                $name { $($field: true,)+ }
            }

            #[doc = concat!(
                "Reads letters from `", $($letter,)+ "` in any order; any other letter is an ",
                "[`ErrorKind::InvalidInput`](table_core::ErrorKind::InvalidInput) error."
            )]
            pub fn parse(letters: &str) -> table_core::Result<Self> {
                let mut set = $name::default();
                for c in letters.chars() {
                    match c {
                        $($letter => set.$field = true,)+
                        other => {
                            return Err($crate::error::invalid_input(format!(
                                "{other:?} is not {} (expected one of {})",
                                $what,
                                concat!($($letter,)+)
                            )));
                        }
                    }
                }
                Ok(set)
            }

            /// `true` when no letter is set.
            pub(crate) fn is_empty(self) -> bool {
                self == $name::default()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                $(if self.$field {
                    std::fmt::Write::write_char(f, $letter)?;
                })+
                Ok(())
            }
        }
    };
}

pub(crate) use letter_set;
