package gateway

import (
	"maps"
	"net/http"
	"slices"
)

// route registers on mux a handler for path under each method of
// byMethod (a GET also answers HEAD, as ServeMux does), and, for any other
// method, fairgate's JSON 405 naming them in Allow: ServeMux's own 405 is
// plain text.
func route(mux *http.ServeMux, path string, byMethod map[string]http.HandlerFunc) {
	allow := slices.Sorted(maps.Keys(byMethod))
	for _, m := range allow {
		mux.HandleFunc(m+" "+path, byMethod[m])
	}
	if _, ok := byMethod[http.MethodGet]; ok && !slices.Contains(allow, http.MethodHead) {
		allow = slices.Insert(allow, slices.Index(allow, http.MethodGet)+1, http.MethodHead)
	}
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) { allowMethod(w, r, allow...) })
}

// notFound answers every path of mux under prefix that no route names:
// fairgate's JSON 404, with message.
func notFound(mux *http.ServeMux, prefix, message string) {
	mux.HandleFunc(prefix, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", message)
	})
}
