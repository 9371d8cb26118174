package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/fairgate/fairgate/admission/roomstate/dynamostore"
)

// proxyInitTables is `fairgate proxy init-tables`: it creates the room-state
// table a cluster of gateways shares.
func proxyInitTables(ctx context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("proxy init-tables", stdout)
	table := fs.String("table", dynamostore.DefaultTable, "room-state table name")
	region := fs.String("region", "", "AWS region (default the SDK's configuration, else us-east-1)")
	endpoint := fs.String("dynamodb-endpoint", os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT"), "DynamoDB endpoint override, e.g. DynamoDB Local")
	if err := fs.Parse(args); err != nil {
		return err
	}
	store, err := dynamostore.Open(ctx, dynamostore.Config{Table: *table, Region: *region, Endpoint: *endpoint})
	if err != nil {
		return err
	}
	if err := store.CreateTable(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "table %s ready\n", *table)
	return err
}
