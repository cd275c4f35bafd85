// Umbrella header for the strata rdma/ message transport.
#pragma once

#include "strata/rdma/buffer_pool.h"
#include "strata/rdma/connection.h"
#include "strata/rdma/endpoint.h"
#include "strata/rdma/log.h"
#include "strata/rdma/message.h"
#include "strata/rdma/options.h"
#include "strata/rdma/status.h"
#include "strata/rdma/transport.h"
