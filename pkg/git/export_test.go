package git

// WithMaintenanceStep calls step at each step of a repack, named as in MaintenanceSteps; an error
// it returns fails the repack at that step.
func WithMaintenanceStep(step func(name string) error) CacheOption {
	return func(c *Cache) { c.maintenanceStep = step }
}

// MaintenanceSteps are the steps of a repack, in order.
var MaintenanceSteps = []string{stepTempWritten, stepIndexInPlace, stepPackInPlace, stepOldPackGone, stepLooseGone}

// WithLargePackObjects sets the object count above which a fetched pack is indexed from disk.
func WithLargePackObjects(n uint32) CacheOption {
	return func(c *Cache) { c.largePackObjects = n }
}
