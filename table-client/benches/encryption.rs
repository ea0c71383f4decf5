//! Client-side encryption cost per entity: four encrypted 1 KiB strings (and one plain
//! property), encrypted and decrypted in the authenticated format and in format "1.0", with a
//! local A256KW key (no I/O: the cost is the cryptography and the entity handling).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use futures::executor::block_on;
use table_client::Entity;
use table_client::encryption::{AesKeyWrap, EncryptionFormat, EncryptionPolicy};

fn entity() -> Entity {
    let text: String = "0123456789abcdef".repeat(64);
    Entity::new("partition", "row")
        .with("SecretA", text.clone())
        .with("SecretB", text.clone())
        .with("SecretC", text.clone())
        .with("SecretD", text)
        .with("Count", 7)
}

fn encryption(c: &mut Criterion) {
    let mut group = c.benchmark_group("encryption");
    for (name, format) in [("authenticated", EncryptionFormat::Authenticated), ("v1", EncryptionFormat::V1)] {
        let policy = EncryptionPolicy::new(AesKeyWrap::new("bench", [9; 32]))
            .encrypt_properties(|_, _, name| name.starts_with("Secret"))
            .format(format);
        let plain = entity();
        let Ok(sealed) = block_on(policy.encrypt_entity("bench", plain.clone())) else {
            panic!("encrypting the bench entity failed");
        };
        group.bench_with_input(BenchmarkId::new("encrypt", name), &plain, |b, plain| {
            b.iter(|| block_on(policy.encrypt_entity("bench", plain.clone())))
        });
        group.bench_with_input(BenchmarkId::new("decrypt", name), &sealed, |b, sealed| {
            b.iter(|| block_on(policy.decrypt_entity("bench", sealed.clone())))
        });
    }
    group.finish();
}

criterion_group!(benches, encryption);
criterion_main!(benches);
