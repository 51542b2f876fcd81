module github.com/sluicehq/sluice/gate-controller

go 1.26.0

require github.com/sluicehq/sluice/pkg v0.0.0

replace github.com/sluicehq/sluice/pkg => ../pkg
