module berth.dev/plugin

go 1.24
