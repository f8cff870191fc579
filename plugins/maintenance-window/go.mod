module berth.dev/plugins/maintenance-window

go 1.24

require berth.dev/plugin v0.0.0

replace berth.dev/plugin => ../sdk-go
