package web

import (
	"html/template"
	"time"
)

// timeElement writes t as a <time> in UTC, which app.js rewrites into the reader's own time
// zone; the UTC time stays on hover (title), and is what a page shows without JavaScript.
func timeElement(t time.Time) template.HTML {
	utc := t.UTC().Format("2006-01-02 15:04 UTC")
	return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `" title="` + utc + `">` + utc + `</time>`)
}
