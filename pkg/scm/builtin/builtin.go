// Package builtin registers every provider that ships with Sluice. Import it for its side effect:
//
//	import _ "github.com/sluicehq/sluice/pkg/scm/builtin"
package builtin

import (
	// Each provider registers itself in its init function.
	_ "github.com/sluicehq/sluice/pkg/scm/gitea"
	_ "github.com/sluicehq/sluice/pkg/scm/github"
	_ "github.com/sluicehq/sluice/pkg/scm/gitlab"
	_ "github.com/sluicehq/sluice/pkg/scm/plaingit"
)
