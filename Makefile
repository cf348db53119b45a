# Switchyard developer commands. `make run` serves, `make test` runs everything.
.PHONY: run test generate lint

run:
	go run ./cmd/switchyard

test:
	scripts/test.sh

generate:
	eval "$$(scripts/tools.sh)" && rm -rf gen && buf generate

lint:
	eval "$$(scripts/tools.sh)" && buf lint && go vet ./...
