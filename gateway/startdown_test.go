package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fairgate/fairgate/internal/testhttp"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/dynamostore"
	"github.com/fairgate/fairgate/room"
)

// A node that starts while its store does not answer serves unjoined and
// joins once the store answers, without a restart (docs/SCALING.md, "Store
// down"). Until then, whatever on_unavailable says, it mints no token and
// admits nobody: it has neither the room's clock (a token minted on its own
// clock, which starts at 0, would be read against the stored clock once it
// joins, ahead of everyone waiting) nor the room's state (a pause made
// through another node meanwhile). It returns a valid token it is shown
// unchanged. Once joined it runs the stored clock and state, and a place
// admitted elsewhere before is not admitted again.
func TestClusterNodeStartedWithoutItsStoreJoinsLater(t *testing.T) {
	for _, mode := range []string{room.OnUnavailableRefuse, room.OnUnavailableLocal} {
		t.Run(mode, func(t *testing.T) {
			bolt := storeKinds(t)["bolt"](t)
			clock := newFakeClock()
			cfg := Config{Config: room.Config{Room: "late", State: "open", Rate: 100, FixedSpeed: true, Tau: Duration(time.Minute)}}
			cfgOf := func(node string) Config {
				c := cfg
				c.StateStore = &room.StateStore{Type: room.StoreBolt, Path: "unused", CallTimeout: testCallTimeout, Node: node, OnUnavailable: mode}
				return c
			}
			a := newNode(t, cfgOf("a"), bolt, "a", clock)
			used := a.issue(t, clock.Now())
			admitted := a.decide(t, used.Token, clock.Now())
			if admitted.Outcome != admission.OutcomeAdmit {
				t.Fatalf("admission at node a: %v %v", admitted.Outcome, admitted.Err)
			}
			if err := a.sh.Apply(room.RoomChange{State: ptr("queue")}, clock.Now()); err != nil {
				t.Fatal(err)
			}
			clock.Add(5 * time.Minute) // the stored clock runs: S well above 0
			waiting := a.issue(t, clock.Now())

			// Node b starts with its link to the store cut.
			link := &flakyStore{Store: bolt}
			link.down.Store(true)
			bc := cfgOf("b")
			bc.Keys, bc.Difficulty = testKeys, intp(0)
			st, err := bc.SettleStateStore("")
			if err != nil {
				t.Fatal(err)
			}
			sh, err := NewSharedOn(t.Context(), bc, st, link, clock.Now)
			if err != nil {
				t.Fatal(err)
			}
			err = sh.Join(t.Context())
			if err == nil || !roomstate.Unwell(err) {
				t.Fatalf("join with the store cut: %v, want an error the store is unwell", err)
			}
			gw, err := New(bc, sh, Options{Now: clock.Now, Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			defer gw.Close()
			if err := gw.ApplyConfig(); !errors.As(err, new(*room.UnavailableError)) {
				t.Fatalf("applying the config unjoined: %v, want it to wait (room.UnavailableError)", err)
			}
			b := node{sh: sh, gw: gw}
			post := func(path, body, cookie string) *httptest.ResponseRecorder {
				t.Helper()
				req := httptest.NewRequest(http.MethodPost, defaultPrefix+path, strings.NewReader(body))
				if cookie != "" {
					req.AddCookie(&http.Cookie{Name: gw.cookies.wait, Value: cookie})
				}
				rec := httptest.NewRecorder()
				gw.ServeHTTP(rec, req)
				return rec
			}

			// Meanwhile the room is paused through node a.
			clock.Add(time.Second)
			if err := a.sh.Apply(room.RoomChange{State: ptr("paused")}, clock.Now()); err != nil {
				t.Fatal(err)
			}
			if rec := post("/token", "", ""); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
				t.Fatalf("a new token unjoined: %d (Retry-After %q), want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
			}
			if rec := post("/token", "", waiting.Token); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), waiting.Token) {
				t.Fatalf("a valid token shown unjoined: %d %.200s, want it back unchanged", rec.Code, rec.Body)
			}
			for _, tk := range []string{used.Token, waiting.Token} {
				if rec := post("/admit", `{"nonce":"0","token":"`+tk+`"}`, ""); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
					t.Fatalf("an admission unjoined: %d (Retry-After %q) %.200s, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
				}
			}
			if err := sh.Apply(room.RoomChange{State: ptr("open")}, clock.Now()); !errors.As(err, new(*room.UnavailableError)) {
				t.Fatalf("an admin change unjoined: %v, want room.UnavailableError", err)
			}
			if cs := sh.ClusterStatus(); cs.Joined {
				t.Fatal("the admin API says joined before the store answered")
			}

			// The store answers again: the room's loop joins.
			link.down.Store(false)
			clock.Add(room.StoreCool)
			if err := sh.Join(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := sh.RetryPending(t.Context(), clock.Now()); err != nil {
				t.Fatal(err)
			}
			if cs := sh.ClusterStatus(); !cs.Joined {
				t.Fatal("the admin API says not joined after the join")
			}
			now := clock.Now()
			va, vb := a.sh.Room.View(now), sh.Room.View(now)
			if vb.State != admission.StatePaused {
				t.Fatalf("after joining the room is %s at node b; it was paused through node a", vb.State)
			}
			if sa, sb := va.Clock.At(now), vb.Clock.At(now); sa != sb || sb < 1 {
				t.Fatalf("after joining node b reads S=%v, node a S=%v", sb, sa)
			}
			if tk := b.issue(t, now); tk.Claims.Srv < waiting.Claims.Srv {
				t.Fatalf("a newcomer at node b (srv %.3f) is placed ahead of one who waited at node a (srv %.3f)", tk.Claims.Srv, waiting.Claims.Srv)
			}
			if err := a.sh.Apply(room.RoomChange{State: ptr("open")}, now); err != nil {
				t.Fatal(err)
			}
			if err := sh.Poll(t.Context(), now); err != nil {
				t.Fatal(err)
			}
			if d := b.decide(t, used.Token, now); d.Outcome == admission.OutcomeAdmit && (!d.Again || d.Pass != admitted.Pass) {
				t.Fatalf("the token admitted at node a before is admitted again at node b: %v again=%v", d.Outcome, d.Again)
			}
			fresh := post("/token", "", "")
			if fresh.Code != http.StatusOK {
				t.Fatalf("a new token at node b once joined: %d %.300s", fresh.Code, fresh.Body)
			}
			var tk ticketJSON
			if err := json.Unmarshal(fresh.Body.Bytes(), &tk); err != nil {
				t.Fatal(err)
			}
			if rec := post("/admit", `{"nonce":"0","token":"`+tk.Token+`"}`, ""); rec.Code != http.StatusOK {
				t.Fatalf("an admission at node b once joined: %d %.300s", rec.Code, rec.Body)
			}
		})
	}
}

// dynamoServerConfig is `fairgate proxy` on DynamoDB at endpoint.
func dynamoServerConfig(t *testing.T, endpoint, table string) ServerConfig {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "fairgate")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	u, _ := url.Parse("http://127.0.0.1:1") // never reached: no pass is shown
	return ServerConfig{Upstream: u, AdminToken: "tok", Gateway: Config{
		Config: room.Config{Room: "cold", State: "queue", Rate: 10, Keys: testKeys, Difficulty: intp(0), StateStore: &room.StateStore{Type: room.StoreDynamo, Endpoint: endpoint, Table: table, Region: "us-east-1", Node: "cold",
			Poll: Duration(100 * time.Millisecond), CallTimeout: Duration(2 * time.Second)}},
	}}
}

// `fairgate proxy` starts while DynamoDB does not answer (here every
// connection to its endpoint is reset), serves unjoined, and joins once
// DynamoDB answers, without a restart. A config no store could take still
// fails the start.
func TestServerStartsWithoutItsStore(t *testing.T) {
	link := testhttp.NewLink(t)
	table := fmt.Sprintf("cold_%d", rand.Int64())
	sc := dynamoServerConfig(t, "http://"+link.Addr, table)
	start := time.Now()
	srv, err := NewServer(sc)
	if err != nil {
		t.Fatalf("start with DynamoDB unreachable: %v", err)
	}
	if took := time.Since(start); took > 2*time.Duration(sc.Gateway.StateStore.CallTimeout) {
		t.Fatalf("the start took %s with the store unreachable, call_timeout %s", took, time.Duration(sc.Gateway.StateStore.CallTimeout))
	}
	pub, _ := net.Listen("tcp", "127.0.0.1:0")
	adm, _ := net.Listen("tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, pub, adm) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("no shutdown")
		}
	}()
	site, admin := "http://"+pub.Addr().String(), "http://"+adm.Addr().String()
	joined := func() bool {
		_, body := get(t, admin+"/rooms/cold", "Authorization", "Bearer tok")
		var st room.RoomStatus
		if err := json.Unmarshal([]byte(body), &st); err != nil || st.Cluster == nil {
			t.Fatalf("admin status: %v %.200s", err, body)
		}
		return st.Cluster.Joined
	}
	if resp, body := get(t, site+"/shop", "Accept", "text/html"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "<html") {
		t.Fatalf("the waiting page unjoined: %d", resp.StatusCode)
	}
	resp, err := http.Post(site+defaultPrefix+"/token", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a new token unjoined: %d (Retry-After %q)", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if joined() {
		t.Fatal("joined with the store unreachable")
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
	if err := dynamostore.New(client, table, 10*time.Second).CreateTable(t.Context()); err != nil {
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
	resp, err = http.Post(site+defaultPrefix+"/token", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a new token once joined: %d", resp.StatusCode)
	}
}

// Only a store that does not answer is tolerated at start: a config no
// store could take, or a store that answers with a refusal (a missing
// table), still fails it.
func TestServerRefusesABrokenStoreConfig(t *testing.T) {
	link := testhttp.NewLink(t)
	for name, change := range map[string]func(*room.StateStore){
		"table name":  func(s *room.StateStore) { s.Table = "a" },
		"table chars": func(s *room.StateStore) { s.Table = "rooms/prod" },
		"region":      func(s *room.StateStore) { s.Region = "US East" },
		"endpoint":    func(s *room.StateStore) { s.Endpoint = "127.0.0.1:8000" },
	} {
		t.Run(name, func(t *testing.T) {
			sc := dynamoServerConfig(t, "http://"+link.Addr, "fairgate_rooms")
			change(sc.Gateway.StateStore)
			if _, err := NewServer(sc); err == nil || !strings.Contains(err.Error(), "state_store") {
				t.Fatalf("started with a broken state_store: %v", err)
			}
		})
	}
	endpoint := os.Getenv("FAIRGATE_DYNAMODB_ENDPOINT")
	if endpoint == "" {
		t.Log("FAIRGATE_DYNAMODB_ENDPOINT unset: a missing table is not checked")
		return
	}
	sc := dynamoServerConfig(t, endpoint, fmt.Sprintf("missing_%d", rand.Int64()))
	if _, err := NewServer(sc); err == nil {
		t.Fatal("started on a table that does not exist")
	}
}
