//! A bare `reqwest` GET of a query page, as the client's query asks for it: what any client
//! pays for a page before decoding it, for the benches that compare our client with it.

/// GETs `url` with the client's query headers (same `Accept` and version); the body read to
/// bytes, and the continuation to the next page, if any.
pub async fn bare_get(http: &reqwest::Client, url: &str) -> (bytes::Bytes, Option<(String, String)>) {
    let response = http
        .get(url)
        .header("Accept", "application/json;odata=minimalmetadata")
        .header("x-ms-version", "2019-02-02")
        .header("DataServiceVersion", "3.0")
        .header("MaxDataServiceVersion", "3.0;NetFx")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "a bare page: {}", response.status());
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
    let next = header("x-ms-continuation-NextPartitionKey").zip(header("x-ms-continuation-NextRowKey"));
    (response.bytes().await.unwrap(), next)
}
