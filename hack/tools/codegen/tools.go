//go:build tools

// Package tools pins k8s.io/code-generator so kube_codegen.sh is in the module cache at a known version.
package tools

import _ "k8s.io/code-generator"
