//! The `User-Agent` every HTTP request carries, in the Azure SDKs' telemetry format:
//! `[<application id> ]azsdk-rust-table-client/<version> (<os>; <arch>)`, e.g.
//! `inventory/2.1 azsdk-rust-table-client/0.1.0 (linux; x86_64)`.
//!
//! The application id is the caller's, checked as the official SDKs check it: 1 to 24
//! printable ASCII characters without spaces (so the header splits unambiguously into
//! products, and always holds a valid header value).

use table_core::Result;

use crate::error::invalid_input;

/// The longest application id the Azure SDKs accept.
pub(crate) const MAX_APPLICATION_ID: usize = 24;

/// Checks an application id (see the module docs). The id is not echoed: a secret pasted in
/// the wrong place would be.
pub(crate) fn check_application_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > MAX_APPLICATION_ID {
        return Err(invalid_input(format!(
            "the `application_id` must be 1 to {MAX_APPLICATION_ID} characters long, not {}",
            id.len()
        )));
    }
    if !id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid_input("the `application_id` must be printable ASCII without spaces"));
    }
    Ok(())
}

/// The `User-Agent` value, prefixed by `application_id` (checked by [`check_application_id`]).
pub(crate) fn user_agent(application_id: Option<&str>) -> String {
    let sdk = format!(
        "azsdk-rust-table-client/{} ({}; {})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        std::env::consts::ARCH
    );
    match application_id {
        Some(id) => format!("{id} {sdk}"),
        None => sdk,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn application_ids_follow_the_sdk_rule() {
        assert!(check_application_id("inventory/2.1").is_ok());
        assert!(check_application_id(&"a".repeat(24)).is_ok());
        for bad in ["", "my app", "tab\tbed", "ünïcode", &"a".repeat(25)] {
            assert!(check_application_id(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_application_id_comes_first() {
        let agent = user_agent(Some("inventory"));
        assert!(agent.starts_with("inventory azsdk-rust-table-client/"), "{agent}");
        assert!(user_agent(None).starts_with("azsdk-rust-table-client/"));
    }
}
