package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadPageTimingFromTheRealScript(t *testing.T) {
	p, err := readPageTiming(filepath.Join("..", "..", filepath.FromSlash(pageAssets)))
	if err != nil {
		t.Fatal(err)
	}
	if p.OneWayCap <= 0 || p.RateLimitJitter <= 0 || p.ClosedWait <= 0 || p.TroubleWait <= 0 || p.NetworkRetry <= 0 {
		t.Fatalf("a timing was not read: %+v", p)
	}
}

func TestParsePageTimingFailsLoudly(t *testing.T) {
	good := `oneWay = Math.min((performance.now() - sent) / 2, 2000);
return { status: 0, data: null, retry: 5 };
const wait = Math.max(0, d.retry_after * 1000 - oneWay);
if (t.status === 200 || (t.status === 429 && t.data && t.data.challenge)) {}
await sleep(a.retry * 1000 + Math.random() * 500);
countdown(30000);
        await sleep(30000);
        t = await post("/token");
if (t.status === 401 || t.status === 403 || t.status === 409 || t.status === 400) {}
const backoff = (t.retry || 5) * 1000;`
	tests := []struct {
		name, src, wantErr string
		want               pageTiming
	}{
		{name: "all there", src: good, want: pageTiming{OneWayCap: 2 * time.Second, RateLimitJitter: 500 * time.Millisecond,
			ClosedWait: 30 * time.Second, TroubleWait: 5 * time.Second, NetworkRetry: 5 * time.Second}},
		{name: "jitter gone", src: strings.Replace(good, "Math.random() * 500", "250", 1), wantErr: "rate-limit jitter"},
		{name: "wait formula changed", src: strings.Replace(good, "- oneWay", "", 1), wantErr: "wait formula"},
		{name: "closed wait disagrees", src: strings.Replace(good, "sleep(30000)", "sleep(20000)", 1), wantErr: "closed wait"},
		{name: "twice", src: good + "\nconst backoff = (t.retry || 5) * 1000;", wantErr: "trouble wait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePageTiming([]byte(tt.src))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
