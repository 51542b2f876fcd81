package scm

// MaxListPages bounds the pages read of one list (a commit's statuses, check runs or pipelines):
// at 100 entries a page (50 on Gitea) a commit with more is read in part, and a runaway list
// costs a bounded number of calls.
const MaxListPages = 10

// ReadPages reads a paged list through read, which returns the entries of one page and the
// number of the page after it, 0 after the last. The first call asks for page 0: the first page,
// as an SCM API serves it when no page is named. Reading stops at the last page, at the first
// error (then nothing is returned), or after MaxListPages pages.
func ReadPages[T any](read func(page int) (entries []T, next int, err error)) ([]T, error) {
	var all []T
	page := 0
	for range MaxListPages {
		entries, next, err := read(page)
		if err != nil {
			return nil, err
		}
		all = append(all, entries...)
		if next == 0 {
			break
		}
		page = next
	}
	return all, nil
}
