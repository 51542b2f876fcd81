// Command e2e-dial opens a TCP connection to each address it is given, in a test pod, and
// exits 0 only if every one connected. It prints one line per address; the suite reads them
// from the pod's termination message.
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
		fmt.Printf("%s: connected\n", addr)
		_ = conn.Close()
	}
	os.Exit(code)
}
