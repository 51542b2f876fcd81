package main

import (
	"encoding/json"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const commonValues = `# shared header

# The image.
image:
  repository: sluicehq/CONTROLLER
  tag: ""
workers: 2 # per controller
resources:
  limits:
    memory: 256Mi
  requests:
    cpu: 50m
`

func TestMergeValuesOverridesKeepsCommentsAndAppends(t *testing.T) {
	own := `# More workers for slow SCMs.
workers: 4
resources:
  limits:
    memory: 512Mi

# Its own value.
targets: [a, b]
`
	out, err := mergeValues("gate-controller", []byte(commonValues), []byte(own))
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, want := range []string{
		"repository: sluicehq/gate-controller",
		"# More workers for slow SCMs.\nworkers: 4 # per controller\n",
		"limits:\n    memory: 512Mi\n  requests:\n    cpu: 50m\n",
		"\n# Its own value.\ntargets: [a, b]\n",
		"\n# The image.\nimage:",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("merged values lack %q:\n%s", want, text)
		}
	}
	if !strings.HasPrefix(text, valuesHeader) {
		t.Errorf("no generated-file header:\n%s", text)
	}
	var parsed map[string]any
	if err := yaml.Unmarshal(out, &parsed); err != nil {
		t.Fatalf("merged values are not YAML: %v", err)
	}
	if parsed["workers"] != 4 {
		t.Errorf("workers = %v, want the chart's 4", parsed["workers"])
	}
}

func TestMergeSchemaAddsPropertiesAndRequiredNames(t *testing.T) {
	common := `{"$schema": "x", "type": "object", "required": ["image"], "properties": {"image": {"type": "object"}, "workers": {"type": "integer"}}, "definitions": {"port": {"type": "integer"}}}`
	own := `{"required": ["targets", "image"], "properties": {"workers": {"type": "integer", "minimum": 4}, "targets": {"type": "array"}}}`
	out, err := mergeSchema([]byte(common), []byte(own))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Comment     string                    `json:"$comment"`
		Required    []string                  `json:"required"`
		Properties  map[string]map[string]any `json:"properties"`
		Definitions map[string]any            `json:"definitions"`
	}
	if err := json.Unmarshal(out, &schema); err != nil {
		t.Fatalf("merged schema is not JSON: %v\n%s", err, out)
	}
	if got := strings.Join(schema.Required, ","); got != "image,targets" {
		t.Errorf("required = %s, want image,targets", got)
	}
	if schema.Properties["workers"]["minimum"] != 4.0 {
		t.Errorf("the chart's workers schema does not replace the shared one: %v", schema.Properties["workers"])
	}
	if schema.Properties["targets"] == nil || schema.Definitions["port"] == nil || schema.Comment == "" {
		t.Errorf("merged schema lost a part:\n%s", out)
	}
	if !strings.Contains(string(out), `"image": {"type": "object"}`) {
		t.Errorf("small objects are not written on one line:\n%s", out)
	}
}
