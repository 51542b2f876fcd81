// Package gate holds the domain logic of gates, shared by the gate-controller and the promoter:
// the effective state of a Gate from its spec and the time (Evaluate), with time windows computed in
// local time so daylight-saving changes move nothing; the validation behind Stalled (ValidateSpec);
// the target annotations (ParseRefs, ParseRequire); and the verdict over referenced gates (Allows).
//
// Windows and daylight saving: a schedule names local clock times in the window's time zone, and a
// window covers the local clock span from a start to start+duration. When clocks spring forward, a
// start or end that the clock skips happens at the moment of the jump (a 02:30 window in New York
// opens at 03:00 EDT that day; a window wholly inside the skipped hour does not open). When clocks
// fall back, a start or end the clock shows twice happens the first time (a 01:30 window of one
// hour opens at 01:30 EDT, not again at 01:30 EDT's repeat in EST, and closes at 02:30 EST, two
// hours later). Durations are therefore local clock spans: a daily 00:00
// window of 24h stays open through both changes, and a Friday 18:00 window of 62h ends Monday 08:00
// local time even across a change on the Sunday.
package gate
