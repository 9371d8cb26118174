package gateway_test

import (
	"fmt"
	"github.com/fairgate/fairgate/admission/tokens"
	"github.com/fairgate/fairgate/gateway"
	"github.com/fairgate/fairgate/room"
	"net/http"
	"net/http/httptest"
	"time"
)

// A waiting room in front of a site, as plain net/http: while the room
// queues, the site's pages show the waiting page and the gateway's own
// endpoints hand out waiting tokens; once the room is opened (here as the
// admin API would), requests reach the site.
func Example() {
	keys, err := tokens.GenerateKeys("k1")
	if err != nil {
		panic(err)
	}
	cfg := gateway.Config{Config: room.Config{Room: "sale", Keys: keys}}
	shared, err := gateway.NewShared(cfg, time.Now) // the room's state, kept across config reloads
	if err != nil {
		panic(err)
	}
	gw, err := gateway.New(cfg, shared, gateway.Options{
		OnDisposition: func(r *http.Request, d gateway.Disposition) { fmt.Println(r.Method, r.URL.Path, d) },
	})
	if err != nil {
		panic(err)
	}
	defer gw.Close()
	if err := gw.ApplyConfig(); err != nil {
		panic(err)
	}
	site := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "tickets") })
	handler := gw.Wrap(site)

	serve := func(method, path string) {
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, httptest.NewRequest(method, path, nil))
		fmt.Println(w.Code)
	}
	serve("GET", "/tickets")
	serve("POST", "/_fairgate/token")
	open := "open"
	if err := shared.Apply(room.RoomChange{State: &open}, time.Now()); err != nil {
		panic(err)
	}
	serve("GET", "/tickets")
	// Output:
	// GET /tickets waiting
	// 200
	// POST /_fairgate/token api
	// 200
	// GET /tickets open
	// 200
}
