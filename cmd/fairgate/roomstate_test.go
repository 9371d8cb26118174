package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// TestProxyInitTables creates the room-state table on DynamoDB Local, twice
// (the second run finds it and succeeds).
func TestProxyInitTables(t *testing.T) {
	endpoint := os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("FAIRGATE_DYNAMODB_ENDPOINT is unset: CI must run the DynamoDB tests (bash .ci/test starts DynamoDB Local)")
		}
		t.Skip("FAIRGATE_DYNAMODB_ENDPOINT unset; `bash .ci/test` starts DynamoDB Local and runs this")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "fairgate")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	table := fmt.Sprintf("rooms_cli_%d", rand.Int64())
	for range 2 {
		out, stderr, code := runCLI(t, "proxy", "init-tables", "--table", table, "--region", "us-east-1", "--dynamodb-endpoint", endpoint)
		if code != 0 || !strings.Contains(out, "table "+table+" ready") {
			t.Fatalf("proxy init-tables: exit %d, stdout %q, stderr %q", code, out, stderr)
		}
	}
}
