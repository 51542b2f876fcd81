package scm

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadPagesFollowsNextUntilTheLastPage(t *testing.T) {
	var asked []int
	got, err := ReadPages(func(page int) ([]string, int, error) {
		asked = append(asked, page)
		switch page {
		case 0:
			return []string{"a", "b"}, 2, nil
		case 2:
			return []string{"c"}, 5, nil
		}
		return []string{"d"}, 0, nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d"}, got)
	assert.Equal(t, []int{0, 2, 5}, asked)
}

func TestReadPagesStopsAfterMaxListPages(t *testing.T) {
	calls := 0
	got, err := ReadPages(func(page int) ([]int, int, error) {
		calls++
		return []int{page}, page + 1, nil
	})
	require.NoError(t, err)
	assert.Equal(t, MaxListPages, calls)
	assert.Len(t, got, MaxListPages)
}

func TestReadPagesReturnsNothingOnAnError(t *testing.T) {
	failed := errors.New("page 1 failed")
	got, err := ReadPages(func(page int) ([]int, int, error) {
		if page == 1 {
			return nil, 0, failed
		}
		return []int{page}, page + 1, nil
	})
	assert.ErrorIs(t, err, failed)
	assert.Nil(t, got)
}
