package caddymodule

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/fairgate/fairgate/internal/testhttp"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/fairgate/fairgate/admission/roomstate/dynamostore"
)

// TestRoomStartsWithoutItsStore: Caddy loads a room whose DynamoDB does
// not answer (every connection to its endpoint is reset), and the room serves
// unjoined: a new token gets 503 with Retry-After, the admin API says
// "joined": false. When DynamoDB answers on that endpoint (DynamoDB Local
// behind the same address), the room joins without a reload.
func TestRoomStartsWithoutItsStore(t *testing.T) {
	t.Setenv("FAIRGATE_IT_KEYS", testKeysJSON)
	t.Setenv("AWS_ACCESS_KEY_ID", "fairgate")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "origin") }))
	defer origin.Close()
	link := testhttp.NewLink(t) // every connection reset until it relays
	addr := link.Addr
	table := fmt.Sprintf("caddy_cold_%d", rand.Int64())
	opts := "state queue\n\t\tdifficulty 0\n\t\tstate_store dynamodb {\n\t\t\ttable " + table + "\n\t\t\tregion us-east-1\n\t\t\tendpoint http://" + addr +
		"\n\t\t\tpoll 100ms\n\t\t\tcall_timeout 1s\n\t\t}"
	tester := newTester(t)
	tester.InitServer(reloadConfig(origin.URL, opts, ""), "caddyfile")
	c := call{t: t, client: tester.Client}
	site := "http://localhost:HTTP_PORT"
	room := "http://localhost:ADMIN_PORT/waiting_room/rooms/reload"
	joined := func() bool {
		t.Helper()
		code, _, body := c.do("GET", room, "")
		var st struct {
			Cluster *struct {
				Joined bool `json:"joined"`
			} `json:"cluster"`
		}
		if err := json.Unmarshal([]byte(body), &st); err != nil || code != 200 || st.Cluster == nil {
			t.Fatalf("room: %d %s", code, body)
		}
		return st.Cluster.Joined
	}
	if joined() {
		t.Fatal("joined with nothing listening at the store's endpoint")
	}
	if code, h, body := c.do("POST", site+"/_fairgate/token", ""); code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" {
		t.Fatalf("a new token unjoined: %d (Retry-After %q) %s", code, h.Get("Retry-After"), body)
	}

	endpoint := os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		t.Log("FAIRGATE_DYNAMODB_ENDPOINT unset: the join once DynamoDB answers is not checked")
		return
	}
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	client := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("fairgate", "local", "")})
	if err := dynamostore.New(client, table, 10*time.Second).CreateTable(context.Background()); err != nil {
		t.Fatal(err)
	}
	link.Relay(target.Host)
	deadline := time.Now().Add(15 * time.Second)
	for !joined() {
		if time.Now().After(deadline) {
			t.Fatal("the room did not join within 15 s of DynamoDB answering")
		}
		time.Sleep(50 * time.Millisecond)
	}
	token(t, c, site)
}
