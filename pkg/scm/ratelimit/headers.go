package ratelimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names the SCMs use. GitHub and Gitea prefix them with X-; GitLab does not.
var (
	remainingHeaders = []string{"X-RateLimit-Remaining", "RateLimit-Remaining"}
	limitHeaders     = []string{"X-RateLimit-Limit", "RateLimit-Limit"}
	resetHeaders     = []string{"X-RateLimit-Reset", "RateLimit-Reset"}
)

// epochThreshold separates a reset given as Unix seconds (GitHub, GitLab) from one given as
// seconds to wait (the IETF RateLimit header draft).
const epochThreshold = 1_000_000_000

// Throttle describes a response that told the client to stop.
type Throttle struct {
	// Until is when requests may resume.
	Until time.Time
	// Reason names the signal, for PausedError messages.
	Reason string
}

// Observe records what a response says about the quota. It pauses the Limiter when the SCM
// refused the request for rate reasons or reports a remaining budget of zero, and returns the
// throttle when the response itself was refused for rate reasons.
func (l *Limiter) Observe(resp *http.Response) (Throttle, bool) {
	now := l.clock.Now()
	h := resp.Header
	remaining, hasRemaining := headerInt(h, remainingHeaders)
	limit, _ := headerInt(h, limitHeaders)
	reset, hasReset := resetTime(h, now)
	retryAfter, hasRetryAfter := RetryAfter(h, now)

	l.mu.Lock()
	defer l.mu.Unlock()

	if hasRemaining {
		l.quota = Quota{Known: true, Limit: limit, Remaining: remaining, Reset: reset}
	}

	throttled := resp.StatusCode == http.StatusTooManyRequests ||
		(resp.StatusCode == http.StatusForbidden && ((hasRemaining && remaining == 0) || hasRetryAfter))

	switch {
	case throttled:
		l.throttled.Add(1)
		t := Throttle{Reason: "the SCM answered " + strconv.Itoa(resp.StatusCode)}
		switch {
		case hasRetryAfter:
			t.Until = now.Add(retryAfter)
			t.Reason += " with Retry-After"
			l.hintless = 0
		case hasRemaining && remaining == 0 && hasReset && reset.After(now):
			t.Until = reset
			t.Reason += ", quota exhausted until reset"
			l.hintless = 0
		default:
			// No hint: back off 1s, 2s, 4s … up to a minute on consecutive throttles.
			t.Until = now.Add(time.Second << min(l.hintless, 6))
			l.hintless++
		}
		l.pauseUntilLocked(t.Until, t.Reason)
		return t, true
	case hasRemaining && remaining == 0 && hasReset && reset.After(now):
		l.pauseUntilLocked(reset, "the SCM reported no remaining quota until reset")
	}
	if resp.StatusCode < 400 {
		l.hintless = 0
	}
	return Throttle{}, false
}

func headerInt(h http.Header, names []string) (int64, bool) {
	for _, n := range names {
		if v := strings.TrimSpace(h.Get(n)); v != "" {
			i, err := strconv.ParseInt(v, 10, 64)
			if err == nil && i >= 0 {
				return i, true
			}
		}
	}
	return 0, false
}

func resetTime(h http.Header, now time.Time) (time.Time, bool) {
	v, ok := headerInt(h, resetHeaders)
	if !ok {
		return time.Time{}, false
	}
	if v >= epochThreshold {
		return time.Unix(v, 0), true
	}
	return now.Add(time.Duration(v) * time.Second), true
}

// ResetAfter returns how long until the quota resets, when the headers say none is left.
func ResetAfter(h http.Header, now time.Time) (time.Duration, bool) {
	remaining, ok := headerInt(h, remainingHeaders)
	if !ok || remaining != 0 {
		return 0, false
	}
	reset, ok := resetTime(h, now)
	if !ok || !reset.After(now) {
		return 0, false
	}
	return min(reset.Sub(now), maxPause), true
}

// RetryAfter parses a Retry-After header given in seconds or as an HTTP date.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return min(time.Duration(secs)*time.Second, maxPause), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
