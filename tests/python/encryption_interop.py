"""Client-side encryption interop with `azure-cosmosdb-table` 1.0.6, the last Python package
that encrypts table entities (format "1.0": AES-256-CBC, the content key wrapped by a KEK).

Usage (the connection string comes from INTEROP_CONNECTION_STRING):

  encryption_interop.py write --table T --partition P --kek aes|rsa
      creates T if needed and inserts the corpus rows into partition P, encrypting every
      property whose name starts with "Secret" (the same resolver as the Rust tests);
  encryption_interop.py read --table T --partition P --kek aes|rsa
      reads partition P with require_encryption and prints
      {"rows": {RowKey: {name: value}}} (strings as JSON strings, Int32 as numbers).

KEKs: "aes" is A256KW under key id "local:aes" with the 32 bytes of ENCRYPTION_AES_KEY_HEX;
"rsa" is RSA-OAEP (SHA-1, MGF1 SHA-1) under "local:rsa" with the PKCS#8 PEM private key at
ENCRYPTION_RSA_KEY_FILE.
"""

import argparse
import json
import os
import sys

from azure.cosmosdb.table.tableservice import TableService
from cryptography.hazmat.backends import default_backend
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.padding import MGF1, OAEP
from cryptography.hazmat.primitives.hashes import SHA1
from cryptography.hazmat.primitives.keywrap import aes_key_unwrap, aes_key_wrap


class AesKek:
    """A256KW, the interface the package expects of a key-encryption key."""

    def __init__(self, key):
        self.key = key

    def wrap_key(self, cek):
        return aes_key_wrap(self.key, cek, default_backend())

    def unwrap_key(self, wrapped, algorithm):
        if algorithm != "A256KW":
            raise ValueError("unknown algorithm " + algorithm)
        return aes_key_unwrap(self.key, wrapped, default_backend())

    def get_key_wrap_algorithm(self):
        return "A256KW"

    def get_kid(self):
        return "local:aes"


class RsaKek:
    """RSA-OAEP with SHA-1, as Key Vault and the older libraries define it."""

    def __init__(self, private_key):
        self.private_key = private_key

    @staticmethod
    def padding():
        return OAEP(mgf=MGF1(algorithm=SHA1()), algorithm=SHA1(), label=None)

    def wrap_key(self, cek):
        return self.private_key.public_key().encrypt(cek, self.padding())

    def unwrap_key(self, wrapped, algorithm):
        if algorithm != "RSA-OAEP":
            raise ValueError("unknown algorithm " + algorithm)
        return self.private_key.decrypt(wrapped, self.padding())

    def get_key_wrap_algorithm(self):
        return "RSA-OAEP"

    def get_kid(self):
        return "local:rsa"


def corpus(partition):
    """The rows both sides agree on: empty, 32K characters, emoji, and no secret at all."""
    return [
        {"PartitionKey": partition, "RowKey": "absent", "Plain": 1},
        {"PartitionKey": partition, "RowKey": "emoji", "SecretA": "🦀 crab 👩‍👩‍👧", "Plain": 2},
        {"PartitionKey": partition, "RowKey": "empty", "SecretA": "", "SecretB": "b", "Plain": 3},
        {"PartitionKey": partition, "RowKey": "long", "SecretA": "x" * 32768, "Plain": 4},
    ]


def kek(name):
    if name == "aes":
        return AesKek(bytes.fromhex(os.environ["ENCRYPTION_AES_KEY_HEX"]))
    with open(os.environ["ENCRYPTION_RSA_KEY_FILE"], "rb") as f:
        return RsaKek(serialization.load_pem_private_key(f.read(), None, default_backend()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("verb", choices=["write", "read"])
    parser.add_argument("--table", required=True)
    parser.add_argument("--partition", required=True)
    parser.add_argument("--kek", choices=["aes", "rsa"], required=True)
    args = parser.parse_args()

    service = TableService(connection_string=os.environ["INTEROP_CONNECTION_STRING"])
    key = kek(args.kek)
    service.key_encryption_key = key
    service.key_resolver_function = lambda kid: key if kid == key.get_kid() else None
    service.require_encryption = True
    service.encryption_resolver_function = lambda pk, rk, name: name.startswith("Secret")

    if args.verb == "write":
        service.create_table(args.table)
        for entity in corpus(args.partition):
            service.insert_entity(args.table, entity)
        print(json.dumps({"written": len(corpus(args.partition))}))
        return

    rows = {}
    query = "PartitionKey eq '{}'".format(args.partition.replace("'", "''"))
    for entity in service.query_entities(args.table, filter=query):
        properties = {}
        for name, value in entity.items():
            if name in ("PartitionKey", "RowKey", "Timestamp", "etag"):
                continue
            properties[name] = getattr(value, "value", value)
        rows[entity["RowKey"]] = properties
    json.dump({"rows": rows}, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
