//! Client-side encryption cost per entity: four encrypted 1 KiB strings (and one plain
//! property), encrypted and decrypted in the authenticated format and in format "1.0", with a
//! local A256KW key (no I/O: the cost is the cryptography and the entity handling), beside the
//! floor: the bare ciphers over the same 4 KiB, with their key expanded once. Then a typed
//! read of such an entity through a [`TypedTable`] on the embedded engine, encrypted against
//! the same type unencrypted (issue 12's target: at most 2x), and the same over HTTP against
//! Azurite (started by the conformance harness; skipped with a banner where it cannot run).
//!
//! Run: `cargo bench -p table-client --bench encryption` (criterion). On a loaded machine,
//! `ENCRYPTION_ROUNDS=41 cargo bench -p table-client --bench encryption` instead times the
//! variants of each group in interleaved rounds and prints each one's median and its median
//! ratio to the group's first (the floor, or the unencrypted read). The API takes the entity
//! by value: the encrypt and decrypt variants consume inputs cloned outside the timed region
//! (each just before its run; `iter_batched` under criterion), and `input_clone` shows what that
//! clone would add. `ENCRYPTION_ONLY=<group>/<variant>` (e.g. `decrypt/authenticated`) with
//! `ENCRYPTION_ROUNDS` runs one variant alone, for `perf record`.

// A bench's fixtures are its own: a failure to build them should stop it loudly.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use aes::Aes256;
use aes_gcm::aead::{AeadInOut, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyIvInit};
use conformance::azurite::{azurite, unique_table_name};
use criterion::{BatchSize, Criterion, criterion_group};
use futures::executor::block_on;
use table_client::encryption::{AesKeyWrap, EncryptionFormat, EncryptionPolicy};
use table_client::engine::Engine;
use table_client::{
    Entity, EntityKey, TableEntity, TableServiceClient, TableServiceClientBuilder, TypedTable,
};

#[path = "support/rounds.rs"]
mod rounds;

const SECRET: usize = 1024;

fn text() -> String {
    "0123456789abcdef".repeat(SECRET / 16)
}

fn entity() -> Entity {
    Entity::new("partition", "row")
        .with("SecretA", text())
        .with("SecretB", text())
        .with("SecretC", text())
        .with("SecretD", text())
        .with("Count", 7)
}

fn policy(format: EncryptionFormat) -> EncryptionPolicy {
    EncryptionPolicy::new(AesKeyWrap::new("bench", [9; 32]))
        .encrypt_properties(|_, _, name| name.starts_with("Secret"))
        .format(format)
}

/// The floor of the authenticated format: AES-256-GCM over four 1 KiB values under one
/// expanded key, sealed in place.
fn floor_gcm_seal(aead: &Aes256Gcm, buffers: &mut [Vec<u8>; 4]) -> [aes_gcm::Tag; 4] {
    let nonce = Nonce::from([3; 12]);
    std::array::from_fn(|i| {
        aead.encrypt_inout_detached(&nonce, b"aad", buffers[i].as_mut_slice().into()).unwrap()
    })
}

/// The floor of opening: each sealed value copied into a buffer (the sealed bytes stay as
/// read), then opened there.
fn floor_gcm_open(aead: &Aes256Gcm, sealed: &[Vec<u8>; 4], tags: &[aes_gcm::Tag; 4]) -> [Vec<u8>; 4] {
    let nonce = Nonce::from([3; 12]);
    std::array::from_fn(|i| {
        let mut buffer = sealed[i].clone();
        aead.decrypt_inout_detached(&nonce, b"aad", buffer.as_mut_slice().into(), &tags[i]).unwrap();
        buffer
    })
}

/// The floor of format "1.0": AES-256-CBC with PKCS#7 over four 1 KiB values, one key
/// schedule per value (the `cbc` crate's API takes the key with the IV).
fn floor_cbc_encrypt(plain: &[u8]) -> [Vec<u8>; 4] {
    std::array::from_fn(|i| {
        cbc::Encryptor::<Aes256>::new(&[9; 32].into(), &[i as u8; 16].into())
            .encrypt_padded_vec::<Pkcs7>(plain)
    })
}

fn floor_cbc_decrypt(sealed: &[Vec<u8>; 4]) -> [Vec<u8>; 4] {
    std::array::from_fn(|i| {
        cbc::Decryptor::<Aes256>::new(&[9; 32].into(), &[i as u8; 16].into())
            .decrypt_padded_vec::<Pkcs7>(&sealed[i])
            .unwrap()
    })
}

/// The bench entity as a type: four encrypted strings.
#[derive(Debug, Clone, TableEntity)]
#[table(partition_key = "{partition}", row_key = "{row}", rename_all = "PascalCase")]
struct Sealed {
    #[table(key_only)]
    partition: String,
    #[table(key_only)]
    row: String,
    #[table(encrypt)]
    secret_a: String,
    #[table(encrypt)]
    secret_b: String,
    #[table(encrypt)]
    secret_c: String,
    #[table(encrypt)]
    secret_d: String,
    count: i32,
}

/// The same type, unencrypted.
#[derive(Debug, Clone, TableEntity)]
#[table(partition_key = "{partition}", row_key = "{row}", rename_all = "PascalCase")]
struct Clear {
    #[table(key_only)]
    partition: String,
    #[table(key_only)]
    row: String,
    secret_a: String,
    secret_b: String,
    secret_c: String,
    secret_d: String,
    count: i32,
}

/// A fresh typed table of `builder`'s service holding the bench entity, read by a client
/// with `policy`.
async fn typed_table<T: TableEntity + Clone + Send + Sync + 'static>(
    builder: TableServiceClientBuilder,
    value: T,
    policy: Option<EncryptionPolicy>,
) -> TypedTable<T> {
    let builder = match policy {
        Some(policy) => builder.encryption(policy),
        None => builder,
    };
    let service = builder.build().unwrap();
    let table = service.create_table(&unique_table_name("bench")).await.unwrap().typed::<T>();
    table.insert(&value).await.unwrap();
    table
}

/// A piece of work to time.
enum Work<'a> {
    /// Runs as it is.
    Plain(Box<dyn FnMut() + 'a>),
    /// Consumes an entity made by `input` outside the timed region.
    Consuming { input: Box<dyn Fn() -> Entity + 'a>, run: Box<dyn FnMut(Entity) + 'a> },
}

/// The groups' variants, each a named piece of work.
type Variant<'a> = (&'a str, Work<'a>);

fn timed<'a>(run: impl FnMut() + 'a) -> Work<'a> {
    Work::Plain(Box::new(run))
}

/// `run` over clones of `input`, made before the clock starts.
fn consuming<'a>(input: &'a Entity, run: impl FnMut(Entity) + 'a) -> Work<'a> {
    Work::Consuming { input: Box::new(|| input.clone()), run: Box::new(run) }
}

/// Runs `each` over the variants of every group: (group, variants).
fn with_groups(each: &mut dyn FnMut(&str, Vec<Variant<'_>>)) {
    let plain = entity();
    let plain_bytes = text().into_bytes();

    let aead = Aes256Gcm::new(&[9; 32].into());
    let mut buffers: [Vec<u8>; 4] = std::array::from_fn(|_| plain_bytes.clone());
    let mut sealed_floor: [Vec<u8>; 4] = std::array::from_fn(|_| plain_bytes.clone());
    let tags = floor_gcm_seal(&aead, &mut sealed_floor);
    let sealed_cbc = floor_cbc_encrypt(&plain_bytes);
    let gcm = policy(EncryptionFormat::Authenticated);
    let v1 = policy(EncryptionFormat::V1);
    let sealed_gcm = block_on(gcm.encrypt_entity("bench", plain.clone())).unwrap();
    let sealed_v1 = block_on(v1.encrypt_entity("bench", plain.clone())).unwrap();
    each(
        "encrypt",
        vec![
            (
                "floor_gcm",
                timed(|| {
                    black_box(floor_gcm_seal(&aead, &mut buffers));
                }),
            ),
            ("floor_cbc", timed(|| drop(black_box(floor_cbc_encrypt(&plain_bytes))))),
            (
                "authenticated",
                consuming(&plain, |e| drop(black_box(block_on(gcm.encrypt_entity("bench", e))))),
            ),
            ("v1", consuming(&plain, |e| drop(black_box(block_on(v1.encrypt_entity("bench", e)))))),
            // Not in the two above: what a caller that must keep its entity adds.
            ("input_clone", timed(|| drop(black_box(plain.clone())))),
        ],
    );
    each(
        "decrypt",
        vec![
            ("floor_gcm", timed(|| drop(black_box(floor_gcm_open(&aead, &sealed_floor, &tags))))),
            ("floor_cbc", timed(|| drop(black_box(floor_cbc_decrypt(&sealed_cbc))))),
            (
                "authenticated",
                consuming(&sealed_gcm, |e| drop(black_box(block_on(gcm.decrypt_entity("bench", e))))),
            ),
            ("v1", consuming(&sealed_v1, |e| drop(black_box(block_on(v1.decrypt_entity("bench", e)))))),
            ("input_clone", timed(|| drop(black_box(sealed_gcm.clone())))),
        ],
    );

    let sealed = Sealed {
        partition: "partition".into(),
        row: "row".into(),
        secret_a: text(),
        secret_b: text(),
        secret_c: text(),
        secret_d: text(),
        count: 7,
    };
    let clear = Clear {
        partition: "partition".into(),
        row: "row".into(),
        secret_a: text(),
        secret_b: text(),
        secret_c: text(),
        secret_d: text(),
        count: 7,
    };
    let key = EntityKey::new("partition", "row");
    let engine = || TableServiceClient::builder().engine(Engine::new());
    let clear_table = block_on(typed_table(engine(), clear.clone(), None));
    let gcm_table =
        block_on(typed_table(engine(), sealed.clone(), Some(policy(EncryptionFormat::Authenticated))));
    let v1_table = block_on(typed_table(engine(), sealed.clone(), Some(policy(EncryptionFormat::V1))));
    each(
        "typed_read_embedded",
        vec![
            ("unencrypted", timed(|| drop(black_box(block_on(clear_table.get(&key)).unwrap())))),
            ("authenticated", timed(|| drop(black_box(block_on(gcm_table.get(&key)).unwrap())))),
            ("v1", timed(|| drop(black_box(block_on(v1_table.get(&key)).unwrap())))),
        ],
    );

    // Over HTTP: Azurite from the conformance harness (skipped, with its banner, without it;
    // not started when another variant runs alone).
    if std::env::var("ENCRYPTION_ONLY").is_ok_and(|only| !only.starts_with("typed_read_azurite/")) {
        return;
    }
    let Some(azurite) = azurite() else { return };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let http = || TableServiceClient::builder().connection_string(&azurite.connection_string);
    let clear_table = runtime.block_on(typed_table(http(), clear, None));
    let gcm_table =
        runtime.block_on(typed_table(http(), sealed.clone(), Some(policy(EncryptionFormat::Authenticated))));
    let v1_table = runtime.block_on(typed_table(http(), sealed, Some(policy(EncryptionFormat::V1))));
    each(
        "typed_read_azurite",
        vec![
            ("unencrypted", timed(|| drop(black_box(runtime.block_on(clear_table.get(&key)).unwrap())))),
            ("authenticated", timed(|| drop(black_box(runtime.block_on(gcm_table.get(&key)).unwrap())))),
            ("v1", timed(|| drop(black_box(runtime.block_on(v1_table.get(&key)).unwrap())))),
        ],
    );
}

fn encryption(c: &mut Criterion) {
    with_groups(&mut |name, variants| {
        let mut group = c.benchmark_group(name);
        for (variant, work) in variants {
            match work {
                Work::Plain(mut run) => group.bench_function(variant, |b| b.iter(&mut run)),
                Work::Consuming { input, mut run } => {
                    group.bench_function(variant, |b| b.iter_batched(&input, &mut run, BatchSize::SmallInput))
                }
            };
        }
        group.finish();
    });
}

/// Each variant of each group timed once per round, in turn (100 runs); per variant the
/// median time of one run and the median ratio to the group's first variant within a round.
fn interleaved(rounds: usize) {
    // `ENCRYPTION_ONLY=encrypt/authenticated` runs that variant alone, for a profiler.
    let only = std::env::var("ENCRYPTION_ONLY").ok();
    with_groups(&mut |group, mut variants| {
        variants.retain(|(name, _)| only.as_ref().is_none_or(|only| *only == format!("{group}/{name}")));
        if variants.is_empty() {
            return;
        }
        let mut times = vec![Vec::new(); variants.len()];
        for _ in 0..rounds {
            for (i, (_, work)) in variants.iter_mut().enumerate() {
                let elapsed = match work {
                    Work::Plain(run) => {
                        let start = std::time::Instant::now();
                        for _ in 0..100 {
                            run();
                        }
                        start.elapsed()
                    }
                    // Each input cloned just before its run, outside the clock, so it is as
                    // warm in cache as an entity a caller has just built (a batch cloned
                    // ahead would be cold); the clock's own cost is some 50 ns a run.
                    Work::Consuming { input, run } => (0..100)
                        .map(|_| {
                            let entity = input();
                            let start = std::time::Instant::now();
                            run(entity);
                            start.elapsed()
                        })
                        .sum(),
                };
                times[i].push(elapsed.as_secs_f64() * 1e6 / 100.0);
            }
        }
        let names: Vec<_> =
            variants.iter().map(|(name, _)| (format!("{group:20} {name:14}"), *name)).collect();
        rounds::report(&names, &times, "µs", 2);
    });
}

criterion_group!(benches, encryption);

fn main() {
    if let Some(rounds) = std::env::var("ENCRYPTION_ROUNDS").ok().and_then(|r| r.parse().ok()) {
        interleaved(rounds);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
