module beamcore/bench/peers

go 1.19
