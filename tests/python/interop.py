#!/usr/bin/env python3
"""Interop with the official Python SDK (azure-data-tables 12.7.0) for the conformance suite.

  interop.py write --table T [--partition P] [--connection-string CS]
      Creates table T if needed and upserts (replace) the corpus below into partition P:
      entities of every EDM type including extremes (rows `typed_*` hold one property of
      every type each, for typed reads). Prints the entities as written.
  interop.py read --table T [--partition P] [--connection-string CS]
      Reads every entity of partition P through the SDK and prints them.

The connection string defaults to $INTEROP_CONNECTION_STRING (the Rust harness uses that, so
the account key never appears on a command line). -0.0 is not in the corpus: Azurite returns
it as 0.0 (JavaScript's JSON drops the sign).

Output (stdout, one JSON document), entities in RowKey order:

  {"entities": [{"PartitionKey": "...", "RowKey": "...",
                 "Timestamp": "<service string>" | null, "etag": "..." | null,
                 "properties": {"<name>": {"type": "Edm.<T>", "value": <v>}, ...}}]}

Values by type, chosen so a Rust test can compare them exactly:
  Edm.String   JSON string           Edm.Boolean  JSON true/false
  Edm.Int32    JSON integer          Edm.Int64    decimal string
  Edm.Double   string: Python repr (shortest round-trip, e.g. "0.1", "1e+308", "-0.0")
               or "NaN", "Infinity", "-Infinity"
  Edm.DateTime string exactly as sent (write) or as the service returned it (read; the SDK
               keeps it in TablesEntityDatetime.tables_service_value). Read also gives
               "sdk_value": the SDK's datetime object, which holds microseconds only, so the
               7th fraction digit is lost there.
  Edm.Guid     lowercase 36-character string
  Edm.Binary   standard base64 with padding ("" for empty)

How the SDK types what it reads: bool, int (Int32), EntityProperty(INT64), float, datetime,
UUID, bytes and str map one to one onto the eight EDM types; anything else is an error.
"""

import argparse
import base64
import json
import math
import os
import sys
import uuid
from datetime import datetime, timezone

from azure.core.exceptions import ResourceExistsError
from azure.data.tables import EdmType, EntityProperty, TableClient, UpdateMode

# Python-native values the SDK serializes itself; EntityProperty where a type must be forced.
P = EntityProperty


def corpus():
    """The entities `write` stores, by RowKey. Comments note what the SDK puts on the wire."""
    return {
        "booleans": {"b_true": True, "b_false": False},
        "int32": {
            # Plain Python ints in range: unannotated JSON integers.
            "i32_min": -(2**31),
            "i32_max": 2**31 - 1,
            "i32_zero": 0,
            # Forced type: annotated "Edm.Int32".
            "i32_annotated": P(-7, EdmType.INT32),
        },
        "int64": {
            "i64_min": P(-(2**63), EdmType.INT64),
            "i64_max": P(2**63 - 1, EdmType.INT64),
            "i64_one": P(1, EdmType.INT64),
            "i64_beyond_i32": P(2**31, EdmType.INT64),
            "i64_below_i32": P(-(2**31) - 1, EdmType.INT64),
        },
        "doubles": {
            # The SDK annotates every float as Edm.Double; specials go as strings.
            "d_zero": 0.0,
            "d_tenth": 0.1,
            "d_two": 2.0,
            "d_third": 1.0 / 3.0,
            "d_negative": -1.5,
            "d_max": 1.7976931348623157e308,
            "d_lowest": -1.7976931348623157e308,
            "d_min_normal": 2.2250738585072014e-308,
            "d_min_subnormal": 5e-324,
            "d_2_pow_53": 9007199254740992.0,
            "d_1e21": 1e21,
            "d_nan": math.nan,
            "d_inf": math.inf,
            "d_neg_inf": -math.inf,
        },
        "datetimes": {
            # A string with EdmType.DATETIME goes to the wire verbatim: 7 fraction digits.
            "dt_ticks": P("2020-01-02T03:04:05.1234567Z", EdmType.DATETIME),
            "dt_min": P("1601-01-01T00:00:00.0000000Z", EdmType.DATETIME),
            "dt_max": P("9999-12-31T23:59:59.9999999Z", EdmType.DATETIME),
            # datetime objects are sent as "%Y-%m-%dT%H:%M:%S.%fZ": always 6 digits.
            "dt_micros": datetime(2020, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc),
            "dt_whole_second": datetime(2021, 6, 7, 8, 9, 10, tzinfo=timezone.utc),
            "dt_epoch": datetime(1970, 1, 1, tzinfo=timezone.utc),
        },
        "guids": {
            "g_value": uuid.UUID("68260b3f-beab-45e2-b900-33e2b442e724"),
            "g_nil": uuid.UUID(int=0),
            "g_max": uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff"),
        },
        "binaries": {
            "x_empty": b"",
            "x_zero_byte": b"\x00",
            "x_all_bytes": bytes(range(256)),
            "x_max_size": bytes(i % 251 for i in range(65536)),
        },
        "strings": {
            "s_empty": "",
            "s_quotes": "it's \"quoted\" '' \\ /",
            "s_unicode": "é € 中文 😀 \u0301",
            "s_whitespace": "  leading and trailing  ",
            "s_control": "a\r\nb\tc\u0001",
            "s_json": '{"a": [1, 2]}',
            # Strings that look like other types must stay strings.
            "s_int": "123",
            "s_int64": "9223372036854775807",
            "s_bool": "true",
            "s_double": "0.1",
            "s_guid": "68260b3f-beab-45e2-b900-33e2b442e724",
            "s_datetime": "2020-01-02T03:04:05Z",
            "s_nan": "NaN",
            "s_long": "x" * 32000,
        },
        # Keys with quotes, non-ASCII and URL-significant characters.
        "row 'quoted' é € 😀 %+&=;": {"s_marker": "tricky row key"},
        **typed_rows(),
    }


def typed_row(**overrides):
    """One row with a property of every EDM type, named like the fields of the Rust test's
    typed struct (`AllTypes` in tests/tests/interop.rs), so a typed client can read it."""
    row = {
        "i32_value": 1,
        "i64_value": P(1, EdmType.INT64),
        "f64_value": 0.5,
        "bool_value": True,
        "string_value": "typed",
        "datetime_value": P("2020-01-02T03:04:05.1234567Z", EdmType.DATETIME),
        "guid_value": uuid.UUID("68260b3f-beab-45e2-b900-33e2b442e724"),
        "binary_value": b"\x00\x01\xff",
    }
    row.update(overrides)
    return row


def typed_rows():
    """Rows `typed_*`: every EDM type at its extremes, one row per extreme of Edm.Double, and
    the optional fields of the Rust struct present (`typed_max`) or absent (the others)."""
    return {
        "typed_min": typed_row(
            i32_value=-(2**31),
            i64_value=P(-(2**63), EdmType.INT64),
            f64_value=-1.7976931348623157e308,
            bool_value=False,
            string_value="",
            datetime_value=P("1601-01-01T00:00:00.0000000Z", EdmType.DATETIME),
            guid_value=uuid.UUID(int=0),
            binary_value=b"",
        ),
        "typed_max": typed_row(
            i32_value=2**31 - 1,
            i64_value=P(2**63 - 1, EdmType.INT64),
            f64_value=1.7976931348623157e308,
            string_value="é € 中文 😀 it's \"quoted\"",
            datetime_value=P("9999-12-31T23:59:59.9999999Z", EdmType.DATETIME),
            guid_value=uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff"),
            binary_value=bytes(range(256)),
            opt_i64=P(2**31, EdmType.INT64),
            opt_string="present",
            opt_datetime=datetime(2020, 1, 2, 3, 4, 5, 123456, tzinfo=timezone.utc),
        ),
        "typed_nan": typed_row(f64_value=math.nan),
        "typed_inf": typed_row(f64_value=math.inf),
        "typed_neg_inf": typed_row(f64_value=-math.inf),
        "typed_subnormal": typed_row(f64_value=5e-324, i32_value=0, i64_value=P(0, EdmType.INT64)),
    }


def describe_double(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return repr(v)


def describe_datetime_sent(v):
    """What the SDK sends for a datetime object (see _common_conversion._to_utc_datetime)."""
    return v.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def describe(v):
    """(EDM type, JSON value) of a property value, as the SDK writes or reads it."""
    if isinstance(v, EntityProperty):
        if v.edm_type == EdmType.INT64:
            return "Edm.Int64", str(int(v.value))
        if v.edm_type == EdmType.INT32:
            return "Edm.Int32", int(v.value)
        if v.edm_type == EdmType.DATETIME and isinstance(v.value, str):
            return "Edm.DateTime", v.value
        raise TypeError(f"unexpected EntityProperty {v!r}")
    if isinstance(v, bool):  # before int: bool is an int in Python
        return "Edm.Boolean", v
    if isinstance(v, int):
        return "Edm.Int32", v
    if isinstance(v, float):
        return "Edm.Double", describe_double(v)
    if isinstance(v, datetime):
        service = getattr(v, "tables_service_value", "")
        return "Edm.DateTime", service or describe_datetime_sent(v)
    if isinstance(v, uuid.UUID):
        return "Edm.Guid", str(v)
    if isinstance(v, bytes):
        return "Edm.Binary", base64.b64encode(v).decode("ascii")
    if isinstance(v, str):
        return "Edm.String", v
    raise TypeError(f"unexpected property value {v!r} of type {type(v).__name__}")


def describe_properties(props, read):
    out = {}
    for name in sorted(props):
        edm, value = describe(props[name])
        prop = {"type": edm, "value": value}
        if read and edm == "Edm.DateTime":
            prop["sdk_value"] = describe_datetime_sent(props[name])
        out[name] = prop
    return out


def client(args):
    return TableClient.from_connection_string(args.connection_string, table_name=args.table)


def write(args):
    entities = []
    with client(args) as table:
        try:
            table.create_table()
        except ResourceExistsError:
            pass
        for row_key, props in sorted(corpus().items()):
            entity = {"PartitionKey": args.partition, "RowKey": row_key, **props}
            meta = table.upsert_entity(entity, mode=UpdateMode.REPLACE)
            entities.append(
                {
                    "PartitionKey": args.partition,
                    "RowKey": row_key,
                    "Timestamp": None,
                    "etag": meta.get("etag"),
                    "properties": describe_properties(props, read=False),
                }
            )
    return entities


def read(args):
    entities = []
    with client(args) as table:
        found = table.query_entities("PartitionKey eq @pk", parameters={"pk": args.partition})
        for entity in found:
            meta = entity.metadata
            timestamp = meta.get("timestamp")
            props = {k: v for k, v in entity.items() if k not in ("PartitionKey", "RowKey")}
            entities.append(
                {
                    "PartitionKey": entity["PartitionKey"],
                    "RowKey": entity["RowKey"],
                    "Timestamp": timestamp.tables_service_value if timestamp else None,
                    "etag": meta.get("etag"),
                    "properties": describe_properties(props, read=True),
                }
            )
    return sorted(entities, key=lambda e: e["RowKey"])


def main():
    parser = argparse.ArgumentParser(
        description="Write or read entities of every EDM type through azure-data-tables.",
        epilog=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("command", choices=["write", "read"])
    parser.add_argument(
        "--connection-string",
        default=os.environ.get("INTEROP_CONNECTION_STRING"),
        help="default: $INTEROP_CONNECTION_STRING",
    )
    parser.add_argument("--table", required=True)
    parser.add_argument("--partition", default="interop-python")
    args = parser.parse_args()
    if not args.connection_string:
        parser.error("--connection-string or $INTEROP_CONNECTION_STRING is required")
    entities = write(args) if args.command == "write" else read(args)
    json.dump({"entities": entities}, sys.stdout, ensure_ascii=False, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
