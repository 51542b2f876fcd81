package gitea

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Remote reaches a Gitea it did not start by its admin's password, makes a token of its own,
// and the API works with it; a wrong password is refused.
func TestRemote(t *testing.T) {
	skipIfShort(t)
	s := StartForTest(t)
	ctx := t.Context()
	client := &http.Client{Timeout: time.Minute}

	r, err := Remote(ctx, s.URL+"/", s.AdminUser, s.AdminPassword, client)
	require.NoError(t, err)
	assert.NotEmpty(t, r.Token)
	assert.NotEqual(t, s.Token, r.Token, "a token of its own")
	cloneURL, err := r.CreateRepo(ctx, "remote")
	require.NoError(t, err)
	assert.Contains(t, cloneURL, "/"+s.AdminUser+"/remote.git")
	require.NoError(t, r.Close(), "closing a remote server leaves it running")
	require.NoError(t, s.API(ctx, "GET", "/repos/"+s.AdminUser+"/remote", nil, nil))

	_, err = Remote(ctx, s.URL, s.AdminUser, "not-the-password", client)
	assert.Error(t, err)
}
