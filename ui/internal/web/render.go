package web

import (
	"bytes"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/ui/internal/view"
)

// page is what every template gets: the layout's fields and the view's Data.
type page struct {
	Title string
	Nav   string
	Query string
	// Watch lists the kinds whose changes refresh the page live; render turns it into the keys
	// of what the page shows (pageKeys).
	Watch  string
	User   string
	CanAct bool
	CSRF   string
	Now    time.Time
	Data   any

	// SignOut is where the sign-out button posts, for a signed-in person (OIDC mode).
	SignOut string
	// Frozen is the header's link to the closed gates, as "2 closed gates".
	Frozen string

	// may backs May (may.go): whether the person may take an action.
	may func(action, ns, name, kind string) bool
}

func parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"short": func(sha string) string {
			if len(sha) > 7 {
				return sha[:7]
			}
			return sha
		},
		"until": view.Until,
		"week":  view.GateWeek,
		// offsets places each segment of a week after the ones before it, for drawing.
		"offsets": func(segs []view.Segment) []float64 {
			out := make([]float64, len(segs))
			at := 0.0
			for i, s := range segs {
				out[i], at = at, at+s.Percent
			}
			return out
		},
		"ago": func(t time.Time, now time.Time) string {
			return strings.TrimPrefix(view.Until(now.Add(now.Sub(t)), now), "in ") + " ago"
		},
		"dur":         view.Duration,
		"percent":     func(f float64) string { return strconv.FormatFloat(f*100, 'f', 0, 64) + "%" },
		"perday":      func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
		"utc":         timeElement,
		"join":        strings.Join,
		"stalled":     stalledMessage,
		"canRollBack": canRollBack,
		"suspension":  suspendState,
		"activityOf":  view.ActivityURL,
		// anchor makes a branch such as env/dev an id and URL fragment that needs no escaping.
		"anchor": func(s string) string {
			return strings.Map(func(r rune) rune {
				if r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
					return r
				}
				return '-'
			}, s)
		},
		"dict": func(kv ...any) map[string]any {
			m := make(map[string]any, len(kv)/2)
			for i := 0; i+1 < len(kv); i += 2 {
				m[kv[i].(string)] = kv[i+1]
			}
			return m
		},
	}
	base, err := template.New("layout").Funcs(funcs).ParseFS(embedded, "templates/layout.html", "templates/parts/*.html")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(embedded, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, name := range names {
		if path.Base(name) == "layout.html" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(embedded, name)
		if err != nil {
			return nil, err
		}
		pages[strings.TrimSuffix(path.Base(name), ".html")] = t
	}
	return pages, nil
}

// SignsOut is an Identifier whose people sign out with a POST to SignOutPath (auth.Login).
type SignsOut interface{ SignOutPath() string }

// render lays out a page. A page is rendered whole into a buffer first, so a template error is
// a clean 500, never half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	p.Now = s.Now()
	// Before the header's count, which reads every gate for every page, not for this one.
	p.Watch = pageKeys(s.Store.Reads(), p.Watch)
	p.Frozen = closedGatesLabel(s.closedGates())
	p.CSRF = s.csrf.token(w, r)
	if id, ok := s.Identify.Identify(r); ok {
		p.User = id.User
		p.CanAct = s.Act != nil
		if p.CanAct {
			p.may = s.offers(r)
		}
		if so, ok := s.Identify.(SignsOut); ok {
			p.SignOut = so.SignOutPath()
		}
	}
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, "layout", p); err != nil {
		s.Log.Error("render page", "page", name, "error", err)
		http.Error(w, "cannot render this page; the UI's log says why", http.StatusInternalServerError)
		return
	}
	s.Metrics.Renders.WithLabelValues(name).Inc()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// notInstalled is the quiet answer of a page whose kind's CRD is missing.
type notInstalled struct{ Kind, Chart string }
