// Command chaos is a fault-injecting reverse proxy for the fault matrix: it forwards everything to
// one backend, and applies the rules it is given to chosen requests (per method, path prefix and
// count): error statuses (with Retry-After), resets, bodies cut short, stalls, trickles, flipped
// bytes, wrong Content-Range, bodies of another length (see internal/chaos). Loopback only.
//
//	chaos -listen 127.0.0.1:9000 -backend http://127.0.0.1:8080
//	curl -X POST 127.0.0.1:9000/__chaos/rules -d '[{"method":"GET","prefix":"/xorbs/","times":1,"kind":"stall"}]'
//	curl -X DELETE 127.0.0.1:9000/__chaos/rules        curl 127.0.0.1:9000/__chaos/hits?prefix=/xorbs/
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strings"

	"github.com/git-xet-transfer/git-xet-transfer/internal/chaos"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	backend := flag.String("backend", "", "URL of the server to forward to")
	flag.Parse()
	if *backend == "" || !strings.HasPrefix(*listen, "127.0.0.1:") {
		log.Fatal("usage: chaos -listen 127.0.0.1:PORT -backend URL")
	}
	p, err := chaos.New(*backend)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /__chaos/rules", func(w http.ResponseWriter, r *http.Request) {
		var rules []chaos.Rule
		if err := json.NewDecoder(r.Body).Decode(&rules); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, rule := range rules {
			p.Add(rule)
		}
	})
	mux.HandleFunc("DELETE /__chaos/rules", func(http.ResponseWriter, *http.Request) { p.Clear() })
	mux.HandleFunc("GET /__chaos/hits", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, p.Hits(r.URL.Query().Get("prefix")))
	})
	mux.Handle("/", p)
	log.Fatal(http.ListenAndServe(*listen, mux))
}
