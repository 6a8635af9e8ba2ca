/* scan.h: stub */
#pragma once
