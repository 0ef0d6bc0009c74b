// Command linkemu is an emulated network link in front of one TCP server, for test/netbench.sh: a
// bandwidth shared by all its connections and half the round trip added in each direction
// (internal/netem). Loopback only. On SIGTERM or SIGINT it prints what it carried and the CPU it
// used to stderr, and exits.
//
//	linkemu -listen 127.0.0.1:9000 -backend 127.0.0.1:8080 -profile home
//	linkemu -profile far -probe 256        (the rate it passes on this machine, 256 MiB each way)
//
// Profiles: home (100 Mbit/s, 40 ms RTT), far (1 Gbit/s, 150 ms), thin (20 Mbit/s, 80 ms), or
// MBIT/RTT_MS (0/0: no shaping).
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/internal/netem"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	backend := flag.String("backend", "", "host:port of the server to forward to (loopback)")
	profile := flag.String("profile", "home", "link: home, far, thin or MBIT/RTT_MS")
	probe := flag.Int64("probe", 0, "send this many MiB each way through the link to a server of its own, print the rates and exit")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("linkemu: ")
	p, err := netem.ParseProfile(*profile)
	if err != nil {
		log.Fatal(err)
	}
	link := netem.New(p)
	if *probe > 0 {
		runProbe(link, *probe)
		return
	}
	if !strings.HasPrefix(*listen, "127.0.0.1:") || !strings.HasPrefix(*backend, "127.0.0.1:") {
		log.Fatal("usage: linkemu -listen 127.0.0.1:PORT -backend 127.0.0.1:PORT [-profile home|far|thin|MBIT/RTT_MS]")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		up, down := link.Sent()
		u, s := cpu()
		fmt.Fprintf(os.Stderr, "linkemu %s: %d connections, %.1f MB up, %.1f MB down in %.1f s; CPU %.2f s user + %.2f s system\n",
			p, link.Conns(), float64(up)/1e6, float64(down)/1e6, time.Since(start).Seconds(), u, s)
		os.Exit(0)
	}()
	log.Fatal(link.Serve(ln, *backend))
}

func runProbe(link *netem.Link, mib int64) {
	u0, s0 := cpu()
	t0 := time.Now()
	down, up, err := netem.Probe(link, mib<<20)
	if err != nil {
		log.Fatal(err)
	}
	u1, s1 := cpu()
	p := link.Profile()
	share := func(r float64) string {
		if p.BitsPerSec == 0 {
			return "unshaped"
		}
		return fmt.Sprintf("%.1f %% of the link", 100*r/float64(p.BitsPerSec))
	}
	fmt.Printf("probe %s, %d MiB each way: down %.0f Mbit/s (%s), up %.0f Mbit/s (%s); CPU %.2f s in %.2f s\n",
		p, mib, down/1e6, share(down), up/1e6, share(up), (u1-u0)+(s1-s0), time.Since(t0).Seconds())
}
