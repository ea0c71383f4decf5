#!/usr/bin/env python3
"""Scenarios of the official Python SDK (azure-data-tables 12.7.0) against a Table endpoint.

  scenarios.py <scenario>    runs one scenario; prints "ok <scenario>" when every check passed
  scenarios.py --list        the scenario names, one per line

The same scenarios as tests/js/scenarios.cjs, so two independent official clients check the
same behaviour. Environment: SCENARIO_CONNECTION_STRING (AccountName, AccountKey,
TableEndpoint), and SCENARIO_STRICT=1 where the endpoint follows the service's rules; without
it the scenarios accept Azurite's documented deviations (protocol doc, section 10), and only
those. SCENARIO_CA_FILE: the CA (PEM) to trust for an HTTPS endpoint, passed to every client as
`connection_verify`. SCENARIO_BEARER_TOKEN (and SCENARIO_EXPIRED_BEARER_TOKEN, which must be
refused): the clients authenticate with that token instead of the account key (no AccountKey
needed). Each scenario creates its own tables; a failed check raises (traceback on stderr,
exit 1).
"""

import json
import math
import os
import re
import secrets
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone

from azure.core import MatchConditions
from azure.core.credentials import AccessToken, AzureNamedKeyCredential, AzureSasCredential
from azure.core.exceptions import HttpResponseError
from azure.data.tables import (
    AccountSasPermissions,
    EdmType,
    EntityProperty,
    TableClient,
    TableSasPermissions,
    TableServiceClient,
    ResourceTypes,
    TableTransactionError,
    UpdateMode,
    generate_account_sas,
    generate_table_sas,
)

STRICT = os.environ.get("SCENARIO_STRICT") == "1"
BEARER_TOKEN = os.environ.get("SCENARIO_BEARER_TOKEN")


def parse_connection_string(text):
    settings = dict(part.split("=", 1) for part in text.split(";") if "=" in part)
    needed = ("AccountName", "TableEndpoint") if BEARER_TOKEN else ("AccountName", "AccountKey", "TableEndpoint")
    for key in needed:
        if not settings.get(key):
            raise SystemExit(f"SCENARIO_CONNECTION_STRING lacks {key}")
    return settings


class StaticToken:
    """A token credential that returns the token the harness minted, said to live an hour."""

    def __init__(self, token):
        self.token = token

    def get_token(self, *scopes, **kwargs):
        return AccessToken(self.token, int(time.time()) + 3600)


class Account:
    """The endpoint under test and the clients every scenario starts from."""

    def __init__(self, settings):
        self.endpoint = settings["TableEndpoint"]
        self.key = settings.get("AccountKey")
        if BEARER_TOKEN:
            self.credential = StaticToken(BEARER_TOKEN)
        else:
            self.credential = AzureNamedKeyCredential(settings["AccountName"], self.key)
        ca_file = os.environ.get("SCENARIO_CA_FILE")
        # Every client trusts the harness's CA only (by default requests trusts the system's).
        self.options = {"connection_verify": ca_file} if ca_file else {}
        self.service = TableServiceClient(self.endpoint, credential=self.credential, **self.options)

    def fresh_table(self, prefix):
        name = unique_name(prefix)
        self.service.create_table(name)
        return self.client(name, self.credential)

    def client(self, table_name, credential):
        return TableClient(self.endpoint, table_name, credential=credential, **self.options)


def unique_name(prefix):
    return prefix + secrets.token_hex(6)


def error_code(error):
    """The service's error code of a failed request. The SDK sets `error_code` for some
    operations only; otherwise it is in the `x-ms-error-code` header or the body (JSON
    `odata.error`, or XML `<Code>` for authorization failures)."""
    if getattr(error, "error_code", None):
        return error.error_code
    response = error.response
    if response is None:
        return None
    if response.headers.get("x-ms-error-code"):
        return response.headers["x-ms-error-code"]
    body = response.text()
    try:
        return json.loads(body)["odata.error"]["code"]
    except (ValueError, KeyError, TypeError):
        match = re.search(r"<(?:m:)?[Cc]ode>([^<]*)</", body)
        return match.group(1) if match else None


def rejects(action, status, codes=None):
    """Runs `action`, which must fail with `status` and one of `codes`; returns the error."""
    try:
        action()
    except HttpResponseError as error:
        assert error.status_code == status, f"status {error.status_code}, expected {status}: {error}"
        code = error_code(error)
        assert codes is None or code in codes, f"code {code}, expected one of {codes}: {error}"
        return error
    raise AssertionError(f"expected a {status} {codes or ''} error, the request succeeded")


def rows(table):
    return [f"{e['PartitionKey']}/{e['RowKey']}" for e in table.list_entities()]


def edm_types(account):
    """Every EDM type, extremes included, written through the SDK and read back."""
    table = account.fresh_table("pyedm")
    when = "2024-02-29T23:59:59.1234567Z"
    guid = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")
    table.create_entity(
        {
            "PartitionKey": "p",
            "RowKey": "r",
            "Str": 'h\u00e9llo \U0001F600 "quoted" \\ /',
            "Empty": "",
            "I32": 2147483647,
            "I32Min": -2147483648,
            "I64": EntityProperty(9223372036854775807, EdmType.INT64),
            "I64Min": EntityProperty(-9223372036854775808, EdmType.INT64),
            "Dbl": 1.5,
            "DblWhole": 2.0,
            "Tiny": 5e-324,
            "Huge": 1.7976931348623157e308,
            "Nan": float("nan"),
            "Inf": float("inf"),
            "NegInf": float("-inf"),
            "Yes": True,
            "No": False,
            "When": EntityProperty(when, EdmType.DATETIME),
            "Id": guid,
            "Bin": b"\x00\x01\xfe\xff",
            "EmptyBin": EntityProperty(b"", EdmType.BINARY),
        }
    )
    e = table.get_entity("p", "r")
    assert e["Str"] == 'h\u00e9llo \U0001F600 "quoted" \\ /'
    assert e["Empty"] == ""
    assert (e["I32"], e["I32Min"]) == (2147483647, -2147483648)
    assert e["I64"] == EntityProperty(9223372036854775807, EdmType.INT64), e["I64"]
    assert e["I64Min"] == EntityProperty(-9223372036854775808, EdmType.INT64), e["I64Min"]
    assert (e["Dbl"], e["DblWhole"], e["Tiny"], e["Huge"]) == (1.5, 2.0, 5e-324, 1.7976931348623157e308)
    assert isinstance(e["DblWhole"], float), "2.0 stays a Double"
    assert math.isnan(e["Nan"]) and e["Inf"] == math.inf and e["NegInf"] == -math.inf
    assert (e["Yes"], e["No"]) == (True, False)
    assert e["When"].tables_service_value == when, e["When"].tables_service_value
    assert e["Id"] == guid
    assert e["Bin"] == b"\x00\x01\xfe\xff"
    assert e["EmptyBin"] in (b"", EntityProperty(b"", EdmType.BINARY)), e["EmptyBin"]
    assert e.metadata["etag"].startswith("W/\"datetime'"), e.metadata
    assert e.metadata["timestamp"] is not None


def batches(account):
    """Transactions commit together; a failing one commits nothing and names its index."""
    table = account.fresh_table("pybatch")
    table.create_entity({"PartitionKey": "p", "RowKey": "kept", "V": 1})
    table.create_entity({"PartitionKey": "p", "RowKey": "gone", "V": 1})
    table.submit_transaction(
        [
            ("create", {"PartitionKey": "p", "RowKey": "a", "V": 1}),
            ("upsert", {"PartitionKey": "p", "RowKey": "b", "V": 2}, {"mode": UpdateMode.REPLACE}),
            ("update", {"PartitionKey": "p", "RowKey": "kept", "W": 3}, {"mode": UpdateMode.MERGE}),
            ("delete", {"PartitionKey": "p", "RowKey": "gone"}),
        ]
    )
    assert rows(table) == ["p/a", "p/b", "p/kept"]
    kept = table.get_entity("p", "kept")
    assert (kept["V"], kept["W"]) == (1, 3), "the merge kept V and added W"

    try:
        table.submit_transaction(
            [
                ("create", {"PartitionKey": "p", "RowKey": "c", "V": 1}),
                ("update", {"PartitionKey": "p", "RowKey": "a", "V": 9}, {"mode": UpdateMode.REPLACE}),
                ("create", {"PartitionKey": "p", "RowKey": "b", "V": 1}),
            ]
        )
        raise AssertionError("the failing batch succeeded")
    except TableTransactionError as error:
        assert error.status_code == 409 and error.error_code == "EntityAlreadyExists", error
        assert error.index == 2, f"failing index {error.index}"
    assert rows(table) == ["p/a", "p/b", "p/kept"], "the failed batch left no row"
    assert table.get_entity("p", "a")["V"] == 1, "the failed batch left no change"

    try:
        table.submit_transaction([("update", {"PartitionKey": "p", "RowKey": "none", "V": 1})])
        raise AssertionError("the update of a missing row succeeded")
    except TableTransactionError as error:
        assert (error.status_code, error.error_code, error.index) == (404, "ResourceNotFound", 0), error


def paging(account):
    """Small pages: every row once, in key order, resumable from a token."""
    table = account.fresh_table("pypage")
    keys = []
    for p in range(3):
        ops = []
        for r in range(9):
            row_key = f"{r:03}"
            keys.append(f"p{p}/{row_key}")
            ops.append(("create", {"PartitionKey": f"p{p}", "RowKey": row_key, "N": p * 9 + r}))
        table.submit_transaction(ops)
    pages = [list(page) for page in table.list_entities(results_per_page=4).by_page()]
    seen = [f"{e['PartitionKey']}/{e['RowKey']}" for page in pages for e in page]
    assert seen == keys, "every row once, in key order"
    assert all(len(page) <= 4 for page in pages) and len(pages) >= 7, [len(p) for p in pages]

    pager = table.list_entities(results_per_page=4).by_page()
    next(pager)
    next(pager)
    token = pager.continuation_token
    resumed = [
        f"{e['PartitionKey']}/{e['RowKey']}"
        for page in table.list_entities(results_per_page=4).by_page(continuation_token=token)
        for e in page
    ]
    assert resumed == keys[8:], resumed

    filtered = list(
        table.query_entities(
            "N ge @low and PartitionKey ne @skip", parameters={"low": 10, "skip": "p2"}, select=["N"], results_per_page=3
        )
    )
    assert [e["N"] for e in filtered] == [10, 11, 12, 13, 14, 15, 16, 17]
    assert all(set(e.keys()) <= {"N"} for e in filtered), filtered[0].keys()

    # A listed property an entity lacks: the service answers it as null, Azurite leaves it out.
    (lacking,) = table.query_entities("N eq 10", select=["N", "Missing"])
    if STRICT:
        assert "Missing" in lacking and lacking["Missing"] is None, dict(lacking)
    else:
        assert "Missing" not in lacking, dict(lacking)
    assert lacking["N"] == 10, dict(lacking)


def etags(account):
    """Replace, merge and the upserts, with current and stale ETags."""
    table = account.fresh_table("pyetag")
    created = table.create_entity({"PartitionKey": "p", "RowKey": "r", "A": 1, "B": "b"})
    table.update_entity(
        {"PartitionKey": "p", "RowKey": "r", "A": 2},
        mode=UpdateMode.MERGE,
        etag=created["etag"],
        match_condition=MatchConditions.IfNotModified,
    )
    row = table.get_entity("p", "r")
    assert (row["A"], row["B"]) == (2, "b"), "a merge keeps the other properties"

    stale = dict(etag=created["etag"], match_condition=MatchConditions.IfNotModified)
    rejects(lambda: table.update_entity({"PartitionKey": "p", "RowKey": "r", "A": 3}, mode=UpdateMode.REPLACE, **stale), 412, ["UpdateConditionNotSatisfied"])
    rejects(lambda: table.delete_entity("p", "r", **stale), 412, ["UpdateConditionNotSatisfied"])

    table.update_entity(
        {"PartitionKey": "p", "RowKey": "r", "A": 3},
        mode=UpdateMode.REPLACE,
        etag=row.metadata["etag"],
        match_condition=MatchConditions.IfNotModified,
    )
    row = table.get_entity("p", "r")
    assert (row["A"], "B" in row) == (3, False), "a replace drops the other properties"

    table.upsert_entity({"PartitionKey": "p", "RowKey": "r", "C": True}, mode=UpdateMode.MERGE)
    row = table.get_entity("p", "r")
    assert (row["A"], row["C"]) == (3, True)
    table.upsert_entity({"PartitionKey": "p", "RowKey": "new", "D": 4}, mode=UpdateMode.REPLACE)
    assert table.get_entity("p", "new")["D"] == 4, "an upsert creates"

    rejects(lambda: table.update_entity({"PartitionKey": "p", "RowKey": "none", "A": 1}, mode=UpdateMode.MERGE), 404, ["ResourceNotFound"])
    table.delete_entity("p", "r")
    rejects(lambda: table.get_entity("p", "r"), 404, ["ResourceNotFound"])


def sas(account):
    """Table SAS: permissions, expiry, a forged key, and the key range it grants."""
    assert account.key, "the sas scenario needs the account key (it signs the SAS)"
    table = account.fresh_table("pysas")
    for pk, rk, v in (("a", "1", 1), ("b", "1", 2), ("b", "5", 3)):
        table.create_entity({"PartitionKey": pk, "RowKey": rk, "V": v})
    expiry = datetime.now(timezone.utc) + timedelta(hours=1)

    def client(credential=account.credential, **options):
        token = generate_table_sas(credential, table.table_name, **options)
        return account.client(table.table_name, AzureSasCredential(token))

    auth_failed = ["AuthenticationFailed"] if STRICT else ["AuthorizationFailure"]
    reader = client(permission=TableSasPermissions(read=True), expiry=expiry)
    assert reader.get_entity("a", "1")["V"] == 1, "a read SAS reads"
    rejects(lambda: reader.create_entity({"PartitionKey": "c", "RowKey": "1"}), 403, ["AuthorizationPermissionMismatch"])

    expired = client(permission=TableSasPermissions(read=True), expiry=datetime.now(timezone.utc) - timedelta(hours=1))
    rejects(lambda: expired.get_entity("a", "1"), 403, auth_failed)

    wrong_key = AzureNamedKeyCredential(account.credential.named_key.name, "bm90IHRoZSBrZXk=")
    forged = client(credential=wrong_key, permission=TableSasPermissions(read=True), expiry=expiry)
    rejects(lambda: forged.get_entity("a", "1"), 403, auth_failed)

    # Partition b, rows 1 to 3: row b/1 only. Azurite ignores ranges (deviation 1).
    ranged = client(
        permission=TableSasPermissions(read=True, add=True),
        expiry=expiry,
        start_pk="b",
        start_rk="1",
        end_pk="b",
        end_rk="3",
    )
    assert ranged.get_entity("b", "1")["V"] == 2, "inside the range"
    if STRICT:
        rejects(lambda: ranged.get_entity("a", "1"), 403)
        rejects(lambda: ranged.get_entity("b", "5"), 403)
        rejects(lambda: ranged.create_entity({"PartitionKey": "c", "RowKey": "1"}), 403)
        assert rows(ranged) == ["b/1"], "a query sees the range only"

    # An account SAS creates tables with `write` (the service takes `c` or `w`).
    token = generate_account_sas(
        account.credential, ResourceTypes(container=True), AccountSasPermissions(write=True), expiry
    )
    made = unique_name("pyacctsas")
    TableServiceClient(account.endpoint, credential=AzureSasCredential(token), **account.options).create_table(made)
    account.client(made, account.credential).create_entity({"PartitionKey": "p", "RowKey": "r"})


def errors(account):
    """The service's error codes and statuses, as the SDK reports them."""
    table = account.fresh_table("pyerr")
    rejects(lambda: account.service.create_table(table.table_name), 409, ["TableAlreadyExists"])
    rejects(lambda: table.get_entity("p", "none"), 404, ["ResourceNotFound"])
    table.create_entity({"PartitionKey": "p", "RowKey": "r"})
    rejects(lambda: table.create_entity({"PartitionKey": "p", "RowKey": "r"}), 409, ["EntityAlreadyExists"])
    bad_key = ["OutOfRangeInput"] if STRICT else ["InvalidInput"]
    rejects(lambda: table.create_entity({"PartitionKey": "p", "RowKey": "bad/key"}), 400, bad_key)
    rejects(lambda: table.create_entity({"PartitionKey": "p", "RowKey": "big", "S": "x" * 32769}), 400, ["PropertyValueTooLarge"])
    rejects(lambda: list(table.query_entities("N eq")), 400, ["InvalidInput"])
    gone = account.client(unique_name("pynone"), account.credential)
    rejects(lambda: gone.create_entity({"PartitionKey": "p", "RowKey": "r"}), 404, ["TableNotFound"])
    # Get Table ACL asks for XML (`Accept: application/xml`), and the service answers its
    # errors in the form the request accepts: the OData XML error (`<m:error>`). Azurite answers
    # XML too, but its own `<Error><Code>` form (with deviation 2's `x-ms-error-code`).
    acl = rejects(lambda: gone.get_table_access_policy(), 404, ["TableNotFound"])
    content_type = acl.response.headers.get("content-type", "")
    assert content_type.split(";")[0].strip() == "application/xml", content_type
    body = acl.response.text()
    form = "<m:code>TableNotFound</m:code>" if STRICT else "<Code>TableNotFound</Code>"
    assert form in body, body
    if BEARER_TOKEN:
        refused = account.client(table.table_name, StaticToken(os.environ.get("SCENARIO_EXPIRED_BEARER_TOKEN", "")))
        rejects(lambda: refused.get_entity("p", "r"), 403, ["AuthenticationFailed"])


def tables(account):
    """Listing tables: a filter on the name, paged by NextTableName."""
    prefix = unique_name("pylist")
    names = [f"{prefix}{i}" for i in range(5)]
    for name in names:
        account.service.create_table(name)
    query = "TableName ge @lo and TableName lt @hi"
    params = {"lo": prefix, "hi": prefix + "z"}
    pages = [[t.name for t in page] for page in account.service.query_tables(query, parameters=params, results_per_page=2).by_page()]
    assert [len(p) for p in pages] == [2, 2, 1], pages
    assert [n for p in pages for n in p] == names
    account.service.delete_table(names[0])
    assert [t.name for t in account.service.query_tables(query, parameters=params)] == names[1:]


SCENARIOS = {f.__name__: f for f in (edm_types, batches, paging, etags, sas, errors, tables)}


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name == "--list":
        print("\n".join(SCENARIOS))
        return
    if name not in SCENARIOS:
        raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    settings = parse_connection_string(os.environ.get("SCENARIO_CONNECTION_STRING", ""))
    SCENARIOS[name](Account(settings))
    print(f"ok {name}")


if __name__ == "__main__":
    main()
