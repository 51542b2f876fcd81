package reconcile

// HasLabels reports whether have carries every label of want with its value: whether an object
// the controller owns still has the labels it puts on, or needs an update.
func HasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
