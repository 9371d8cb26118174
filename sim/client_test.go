package sim

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestDecodeAnswer(t *testing.T) {
	tests := []struct {
		name, in string
		want     answer
	}{
		{"wait token", `{"room":"sim","state":"queue","token":"a.b.c","challenge":"ch","difficulty":4,"next_attempt":1925000000123,"retry_after":1.5,"estimate_seconds":null,"outcome":"early","message":"caf\u00e9 \"ok\"","list":[1,{"x":[]}]}`,
			answer{Token: "a.b.c", Challenge: "ch", Difficulty: 4, NextAttempt: 1925000000123, Outcome: "early"}},
		{"error", `{"error":{"message":"bad \\ token","code":"token_invalid"}}`, answer{Error: struct {
			Code string `json:"code"`
		}{"token_invalid"}}},
		{"escaped token: encoding/json", `{"token":"a\/b"}`, answer{Token: "a/b"}},
		{"key in capitals: encoding/json", `{"TOKEN":"x"}`, answer{Token: "x"}},
		{"float difficulty: encoding/json", `{"difficulty":4.0,"token":"t"}`, answer{Token: "t"}},
		{"not an object", `[]`, answer{}},
		{"empty", ``, answer{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decodeAnswer([]byte(tt.in)); got != tt.want {
				t.Errorf("decodeAnswer(%s) = %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzDecodeAnswer: on valid JSON the scanner reads what encoding/json reads.
func FuzzDecodeAnswer(f *testing.F) {
	f.Add(`{"token":"a.b.c","challenge":"ch","difficulty":4,"next_attempt":17,"outcome":"busy","x":[true,null,"\""]}`)
	f.Add(`{"error":{"code":"pow","message":"x"},"error":null}`)
	f.Add(`{"Token":"x","token":"y"}`)
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		var want answer
		_ = json.Unmarshal([]byte(in), &want)
		if got := decodeAnswer([]byte(in)); got != want {
			t.Errorf("decodeAnswer(%q) = %+v, encoding/json reads %+v", in, got, want)
		}
	})
}

func TestAdmitBody(t *testing.T) {
	for _, tt := range [][2]string{{"17", "a.b-c_d"}, {"1", `we"ird\`}, {"", "<&>"}} {
		var got map[string]string
		if err := json.Unmarshal(admitBody(nil, tt[0], tt[1]), &got); err != nil {
			t.Fatal(err)
		}
		if got["nonce"] != tt[0] || got["token"] != tt[1] || len(got) != 2 {
			t.Errorf("admitBody(%q, %q) reads back as %v", tt[0], tt[1], got)
		}
	}
}

// TestClientRequest: the handler sees what httptest.NewRequest would give
// it, and a status-less answer reads as 200.
func TestClientRequest(t *testing.T) {
	c := newClient(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := make([]byte, 64)
		n, _ := r.Body.Read(body)
		if r.Method != http.MethodPost || r.URL.Path != "/_fairgate/admit" || r.Host != "example.com" ||
			r.RemoteAddr != "192.0.2.1:1234" || r.Header.Get("Authorization") != "Bearer x" ||
			r.ContentLength != 2 || string(body[:n]) != "{}" || r.Context() == nil {
			t.Errorf("request: %s %s host %q from %q, %v, %d bytes %q", r.Method, r.URL, r.Host, r.RemoteAddr, r.Header, r.ContentLength, body[:n])
		}
		w.Header().Set("X-Seen", "1")
		_, _ = w.Write([]byte(`{"outcome":"ok"}`))
	}))
	for range 2 {
		status, body := c.do(&c.admit, []byte("{}"), "Authorization", "Bearer x")
		if status != http.StatusOK || string(body) != `{"outcome":"ok"}` || len(c.rec.header) != 1 {
			t.Errorf("answer: %d %q, header %v", status, body, c.rec.header)
		}
	}
}
