// Command chartgen writes the values.yaml and values.schema.json of every Sluice controller chart
// from the parts all charts share (hack/chart-common) and the chart's own parts (values.own.yaml
// and values.own.schema.json beside them). `make generate` runs it; `make verify` fails when a
// chart's generated files differ from what it writes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

func main() {
	common := flag.String("common", "hack/chart-common", "folder of the shared values.yaml and values.schema.json")
	charts := flag.String("charts", "charts", "folder holding one folder per chart")
	flag.Parse()
	if err := run(*common, *charts); err != nil {
		fmt.Fprintln(os.Stderr, "chartgen:", err)
		os.Exit(1)
	}
}

func run(commonDir, chartsDir string) error {
	commonValues, err := os.ReadFile(filepath.Join(commonDir, "values.yaml"))
	if err != nil {
		return err
	}
	commonSchema, err := os.ReadFile(filepath.Join(commonDir, "values.schema.json"))
	if err != nil {
		return err
	}
	owned, err := filepath.Glob(filepath.Join(chartsDir, "*", "values.own.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(owned)
	for _, ownValuesPath := range owned {
		dir := filepath.Dir(ownValuesPath)
		if err := generateChart(dir, commonValues, commonSchema); err != nil {
			return fmt.Errorf("chart %s: %w", filepath.Base(dir), err)
		}
	}
	return nil
}

func generateChart(dir string, commonValues, commonSchema []byte) error {
	name := filepath.Base(dir)
	ownValues, err := os.ReadFile(filepath.Join(dir, "values.own.yaml"))
	if err != nil {
		return err
	}
	values, err := mergeValues(name, commonValues, ownValues)
	if err != nil {
		return fmt.Errorf("values: %w", err)
	}
	ownSchema, err := os.ReadFile(filepath.Join(dir, "values.own.schema.json"))
	if os.IsNotExist(err) {
		ownSchema = []byte("{}")
	} else if err != nil {
		return err
	}
	schema, err := mergeSchema(commonSchema, ownSchema)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), values, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "values.schema.json"), schema, 0o644)
}
