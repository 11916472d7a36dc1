//! Checks the shared DynamoDB Local test harness itself.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::support::dynamodb_local;

#[test]
fn endpoint_is_shared_and_answers_list_tables() {
    let first = dynamodb_local::endpoint();
    let second = dynamodb_local::endpoint();
    assert_eq!(first, second);
    assert!(
        std::ptr::eq(first, second),
        "endpoint() must hand out the same static string"
    );

    let (status, body) = raw_list_tables(first);
    assert_eq!(status, 200, "ListTables answered {status}: {body}");
    assert!(body.contains("\"TableNames\""), "unexpected body: {body}");
}

#[test]
fn endpoint_from_another_thread_is_the_same() {
    let here = dynamodb_local::endpoint();
    let there = std::thread::spawn(dynamodb_local::endpoint)
        .join()
        .expect("endpoint() panicked on another thread");
    assert_eq!(here, there);
}

/// POSTs DynamoDB `ListTables` over a plain TcpStream; returns (status, body).
fn raw_list_tables(endpoint: &str) -> (u16, String) {
    let authority = endpoint
        .strip_prefix("http://")
        .unwrap_or_else(|| panic!("expected an http:// endpoint, got {endpoint}"))
        .trim_end_matches('/');
    let addr = authority
        .to_socket_addrs()
        .expect("resolve endpoint")
        .next()
        .expect("endpoint resolves to an address");
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("set read timeout");
    let body = "{}";
    let request = format!(
        "POST / HTTP/1.1\r\n\
         Host: {authority}\r\n\
         Content-Type: application/x-amz-json-1.0\r\n\
         X-Amz-Target: DynamoDB_20120810.ListTables\r\n\
         Authorization: AWS4-HMAC-SHA256 Credential=local/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x\r\n\
         Content-Length: {}\r\n\
         Connection: close\r\n\
         \r\n\
         {body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("send request");
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .expect("read response until the server closes");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or((response.as_str(), ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {head:?}"));
    (status, body.to_string())
}
