package plugin

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// openBrowser opens url with $BROWSER when set (a command, or several separated by ':' tried in
// order, as in Python's webbrowser and many CLIs), else the system's opener. It does not wait for
// the browser.
func openBrowser(url string) error {
	var candidates [][]string
	if b := os.Getenv("BROWSER"); b != "" {
		for _, cmd := range strings.Split(b, ":") {
			if fields := strings.Fields(cmd); len(fields) > 0 {
				candidates = append(candidates, fields)
			}
		}
	} else {
		switch runtime.GOOS {
		case "darwin":
			candidates = [][]string{{"open"}}
		case "windows":
			candidates = [][]string{{"rundll32", "url.dll,FileProtocolHandler"}}
		default:
			candidates = [][]string{{"xdg-open"}}
		}
	}
	err := errors.New("$BROWSER names no command")
	for _, c := range candidates {
		cmd := exec.Command(c[0], append(c[1:], url)...)
		if err = cmd.Start(); err == nil {
			go func() { _ = cmd.Wait() }()
			return nil
		}
	}
	return err
}
