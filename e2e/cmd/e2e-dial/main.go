// Command e2e-dial opens a TCP connection to each address it is given, in a test pod, and
// exits 0 only if every one connected. It prints one line per address, with the address it
// connected to (a name is resolved by the pod's nameserver); the suite reads them from the pod's
// log.
package main

import (
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: e2e-dial host:port...")
		os.Exit(2)
	}
	code := 0
	for _, addr := range os.Args[1:] {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			fmt.Printf("%s: %v\n", addr, err)
			code = 1
			continue
		}
		fmt.Printf("%s: connected to %s\n", addr, conn.RemoteAddr())
		_ = conn.Close()
	}
	os.Exit(code)
}
