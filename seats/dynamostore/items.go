package dynamostore

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type item = map[string]types.AttributeValue

func sv(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func nv(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func ms(t time.Time) types.AttributeValue {
	if t.IsZero() {
		return nv(0)
	}
	return nv(t.UnixMilli())
}
func key(pk string) item { return item{"PK": sv(pk), "SK": sv("META")} }

func getS(it item, name string) string {
	if v, ok := it[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(it item, name string) int64 {
	if v, ok := it[name].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func getTime(it item, name string) time.Time {
	if n := getN(it, name); n != 0 {
		return time.UnixMilli(n).UTC()
	}
	return time.Time{}
}

func seatKey(event, seat string) item { return key(event + "#" + seat) }
