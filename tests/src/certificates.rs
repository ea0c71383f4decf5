//! Test certificates: a private CA generated per process with `rcgen` and a server
//! certificate it signed for 127.0.0.1 and localhost, for the HTTPS servers the harness starts
//! (the OAuth Azurite, the HTTPS table-server). Clients trust the CA, never the system roots.

/// A private CA and a server certificate it signed for 127.0.0.1 and localhost, as PEM.
pub(crate) struct Certificates {
    /// The CA's certificate: what clients trust.
    pub(crate) ca_pem: String,
    /// The server's certificate.
    pub(crate) server_pem: String,
    /// The server certificate's private key.
    pub(crate) server_key_pem: String,
}

impl Certificates {
    /// A new CA and server certificate.
    pub(crate) fn generate() -> Result<Certificates, String> {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
        };
        let failed = |e: rcgen::Error| format!("cannot generate the test certificates: {e}");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(failed)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "conformance test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let ca =
            CertifiedIssuer::self_signed(ca_params, KeyPair::generate().map_err(failed)?).map_err(failed)?;
        let server_key = KeyPair::generate().map_err(failed)?;
        let server_params =
            CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).map_err(failed)?;
        let server = server_params.signed_by(&server_key, &ca).map_err(failed)?;
        Ok(Certificates {
            ca_pem: ca.pem(),
            server_pem: server.pem(),
            server_key_pem: server_key.serialize_pem(),
        })
    }
}
