package dynamoav

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
)

func TestRoundTrip(t *testing.T) {
	type row struct {
		PK  string `dynamodbav:"PK"`
		TTL int64  `dynamodbav:"ttl"`
	}
	it, err := Marshal(row{PK: "room#sale", TTL: 42})
	if err != nil {
		t.Fatal(err)
	}
	var got row
	if err := Unmarshal(it, &got); err != nil || got != (row{PK: "room#sale", TTL: 42}) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if err := Unmarshal(it, &struct {
		PK int `dynamodbav:"PK"`
	}{}); err == nil || !strings.Contains(err.Error(), "reading") {
		t.Fatalf("a string read as an int: %v", err)
	}
	if _, err := Build(expression.NewBuilder()); err == nil || !strings.Contains(err.Error(), "building an expression") {
		t.Fatalf("an empty expression: %v", err)
	}
}
